/**
 * Client ID Metadata Documents (MCP 2025-11-25): a `client_id` that is an HTTPS URL names the JSON
 * document its client publishes there, and the door reads the client's metadata from it instead of
 * from a registration. Fetching a URL a stranger chose is guarded (SSRF): https only; every
 * address the host name resolves to must be public, and the fetch connects to the address that
 * was checked; redirects are refused, not followed; 5 seconds and 5 KiB at most; JSON only; the
 * document's `client_id` must be its URL. Answers are cached per instance for as long as the
 * document's `Cache-Control` says, within bounds; failures for a minute.
 *
 * @see draft-ietf-oauth-client-id-metadata-document §3, §4, §6
 */
import { isIP } from 'node:net';
import { readBodyText } from '../../http/body.js';
import { parseJsonInput } from '../../http/input-guard.js';
import { TtlCache } from '../../internal/ttl-cache.js';
import type { ClientDocumentTransport } from '../config.js';
import type { ClientDocument, ClientDocumentSource } from '../storage/clients.js';
import { acceptClientIdDocument } from './client-metadata.js';
import { isPublicAddress } from './public-address.js';

const MAX_DOCUMENT_BYTES = 5 * 1024;
const FETCH_TIMEOUT_MS = 5000;
const MAX_CLIENT_ID_LENGTH = 2000;
/** How long a document is trusted: its `max-age` within these bounds, else the default. */
const DOCUMENT_TTL = { minMs: 60_000, defaultMs: 5 * 60_000, maxMs: 24 * 60 * 60_000 } as const;
const FAILURE_TTL_MS = 60_000;

/** What the door does with a client id that is a URL: fetch, check and cache its document. */
export class ClientIdDocuments implements ClientDocumentSource {
  readonly #cache: TtlCache<string, ClientDocument>;
  readonly #inFlight = new Map<string, Promise<ClientDocument>>();

  constructor(
    private readonly transport: ClientDocumentTransport,
    now: () => number,
  ) {
    this.#cache = new TtlCache({ ttlMs: DOCUMENT_TTL.defaultMs, maxEntries: 1000, now });
  }

  /** Client ids that name a document: any `http(s)://` URL (the plain-http ones are refused). */
  isDocumentId(clientId: string): boolean {
    return /^https?:\/\//i.test(clientId);
  }

  async resolve(clientId: string): Promise<ClientDocument> {
    const cached = this.#cache.get(clientId);
    if (cached !== undefined) return cached.ok ? { ...cached, fresh: false } : cached;
    const problem = clientIdUrlProblem(clientId);
    if (problem !== null) return { ok: false, problem };
    // Requests arriving together for one client share one fetch.
    let pending = this.#inFlight.get(clientId);
    if (pending === undefined) {
      pending = this.#fetch(clientId).finally(() => this.#inFlight.delete(clientId));
      this.#inFlight.set(clientId, pending);
    }
    return pending;
  }

  async #fetch(clientId: string): Promise<ClientDocument> {
    const fetched = await fetchDocument(this.transport, new URL(clientId));
    if ('problem' in fetched) return this.#failed(clientId, fetched.problem);
    const accepted = acceptClientIdDocument(clientId, fetched.body);
    if (!accepted.ok) return this.#failed(clientId, accepted.problem);
    const found = { ok: true as const, metadata: { ...accepted.metadata, client_id: clientId }, fresh: true };
    this.#cache.set(clientId, found, fetched.ttlMs);
    return found;
  }

  /** A failure, remembered for a while so a bad client id cannot make the door hammer its host. */
  #failed(clientId: string, problem: string): ClientDocument {
    const failed = { ok: false as const, problem };
    this.#cache.set(clientId, failed, FAILURE_TTL_MS);
    return failed;
  }
}

/**
 * Why a client id URL cannot name a document (§3): https, a path, no dot segments, no fragment, no
 * userinfo, and written as the URL parser would write it, since the document's `client_id` is
 * compared with it string for string.
 */
export function clientIdUrlProblem(clientId: string): string | null {
  if (clientId.length > MAX_CLIENT_ID_LENGTH) return 'the client_id URL is too long';
  let url: URL;
  try {
    url = new URL(clientId);
  } catch {
    return 'the client_id is not a URL';
  }
  if (url.protocol !== 'https:') return 'a client_id URL must use https';
  if (url.username || url.password) return 'a client_id URL must not contain userinfo';
  if (clientId.includes('#')) return 'a client_id URL must not contain a fragment';
  const path = clientId.slice(url.origin.length).split(/[?]/)[0]!;
  if (path.split('/').some((segment) => /^(\.|%2e){1,2}$/i.test(segment))) {
    return 'a client_id URL must not contain . or .. path segments';
  }
  if (url.pathname === '/') return 'a client_id URL must have a path';
  if (url.href !== clientId) return 'a client_id URL must be written in normalized form';
  return null;
}

class TooLarge extends Error {}

type Fetched = { body: unknown; ttlMs: number } | { problem: string };

async function fetchDocument(transport: ClientDocumentTransport, url: URL): Promise<Fetched> {
  const hostname = url.hostname.replace(/^\[|\]$/g, '');
  let addresses: string[];
  try {
    addresses = isIP(hostname) ? [hostname] : await transport.resolve(hostname);
  } catch {
    return { problem: 'its host name does not resolve' };
  }
  if (addresses.length === 0) return { problem: 'its host name does not resolve' };
  // Every address, not only the one used: a name that also points inward is refused outright.
  if (!addresses.every(isPublicAddress)) {
    return { problem: 'its host resolves to a private, loopback or link-local address' };
  }
  const signal = AbortSignal.timeout(FETCH_TIMEOUT_MS);
  let response: Response;
  try {
    response = await transport.fetch(url, addresses[0]!, signal);
  } catch {
    return { problem: signal.aborted ? 'it did not answer within 5 seconds' : 'it could not be fetched' };
  }
  const refuse = async (problem: string) => {
    await response.body?.cancel().catch(() => {});
    return { problem };
  };
  if (response.status >= 300 && response.status < 400) {
    return refuse('it answered with a redirect, which the door does not follow');
  }
  if (response.status !== 200) return refuse(`it answered HTTP ${response.status}`);
  const type = (response.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/json' && !/^application\/[a-z0-9.+-]+\+json$/.test(type)) {
    return refuse('it is not served as application/json');
  }
  let text: string;
  try {
    text = await readBodyText(response, { maxBytes: MAX_DOCUMENT_BYTES, tooLarge: () => new TooLarge() });
  } catch (error) {
    if (error instanceof TooLarge) return { problem: `it is larger than ${MAX_DOCUMENT_BYTES} bytes` };
    return { problem: signal.aborted ? 'it did not answer within 5 seconds' : 'it could not be read' };
  }
  const parsed = parseJsonInput(text, { where: 'document' });
  if (!parsed.ok) return { problem: parsed.reason === 'syntax' ? 'it is not valid JSON' : parsed.message };
  return { body: parsed.value, ttlMs: cacheLifetime(response.headers.get('cache-control')) };
}

/** The document's `max-age` (0 for `no-store`/`no-cache`), held within the door's bounds. */
function cacheLifetime(cacheControl: string | null): number {
  const directives = (cacheControl ?? '').toLowerCase();
  const maxAge = /(?:^|[,\s])max-age=(\d+)/.exec(directives);
  let ms: number = DOCUMENT_TTL.defaultMs;
  if (/(?:^|[,\s])no-(?:store|cache)\b/.test(directives)) ms = 0;
  else if (maxAge) ms = Number(maxAge[1]) * 1000;
  return Math.min(Math.max(ms, DOCUMENT_TTL.minMs), DOCUMENT_TTL.maxMs);
}
