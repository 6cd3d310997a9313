import { z } from 'zod';
import { callPlatform, failureReason } from '../api.js';
import { parseCommandArgs } from '../args.js';
import { CliError } from '../cli-error.js';
import {
  DEFAULT_API_BASE,
  displayKey,
  ensureConfigDir,
  parseApiBase,
  storedApiBase,
  writeConfig,
} from '../config.js';
import { type CliIo, printable, styles } from '../io.js';
import { describeSpan, type LoginPayload, listenForLogin } from '../loopback.js';

/** How long a login waits for the browser (the CLI contract's login timer). */
export const LOGIN_TIMEOUT_MS = 5 * 60_000;

/**
 * `service login`: a loopback listener, the bootstrap page in the browser, the key written to
 * the config. No code verifier or exchange: the page posts the key straight to the listener.
 */
export async function run(args: string[], io: CliIo): Promise<number> {
  const { values } = parseCommandArgs(args, {
    'api-base': { type: 'string' },
    'no-browser': { type: 'boolean' },
  });
  // An empty one (an unset variable in --api-base "$URL") is refused, not read as "not given".
  const apiBase =
    values['api-base'] !== undefined
      ? parseApiBase(values['api-base'])
      : ((await storedApiBase(io)) ?? DEFAULT_API_BASE);
  const style = styles(io);
  await checkReachable(apiBase);
  await ensureConfigDir(io);
  // With --json, stdout carries only the result: the instructions go to stderr.
  const say = io.json ? io.stderr : io.stdout;

  const listener = await listenForLogin({
    apiOrigin: new URL(apiBase).origin,
    timeoutMs: io.loginTimeoutMs ?? LOGIN_TIMEOUT_MS,
    ...(io.stdin.isTTY ? { pasteFrom: io.stdin } : {}),
    onBadPaste: () =>
      io.stderr.write(
        "That is not a login code. Paste the code the browser page shows, or a whole CLI key from the dashboard's Keys page.\n",
      ),
    onPastedKey: (key) =>
      vouchedKey(apiBase, key).catch((error: unknown) => {
        io.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
        return null;
      }),
  });
  try {
    const url = `${apiBase}/dev/cli-bootstrap?${new URLSearchParams({ cb: listener.callbackUrl, mode: 'personal-key' })}`;
    const opened = values['no-browser'] ? false : await io.openUrl(url);
    say.write(
      `${opened ? 'Opened your browser. If it did not open, visit' : 'Open this URL in your browser to log in'}:\n\n  ${url}\n\n`,
    );
    say.write(
      `Waiting for the browser (at most ${describeSpan(io.loginTimeoutMs ?? LOGIN_TIMEOUT_MS)})${io.stdin.isTTY ? "; or paste the login code the page shows (it is not echoed), or a CLI key made on the dashboard's Keys page" : ''}...\n`,
    );
    const payload = await listener.payload;
    const path = await writeConfig(io, {
      apiBase,
      apiKey: payload.apiKey,
      tenantId: payload.tenantId,
      appId: payload.appId,
      issuedToEmail: payload.email,
      issuedAt: payload.issuedAt,
    });
    const key = displayKey(payload.apiKey);
    if (io.json) {
      io.stdout.write(
        `${JSON.stringify({ email: payload.email, tenantId: payload.tenantId, apiBase, key, configPath: path })}\n`,
      );
      return 0;
    }
    // The email and tenant came from the browser page's post: shown, never obeyed by the terminal.
    const account = payload.email === null ? 'your account' : printable(payload.email);
    io.stdout.write(
      `${style.green('Logged in')} as ${style.bold(account)} (tenant ${printable(payload.tenantId)}).\nKey ${key} stored in ${path}.\n`,
    );
    return 0;
  } finally {
    await listener.close();
  }
}

const vouchSchema = z.object({
  tenant: z.object({ id: z.string().min(1) }),
  user: z.object({ email: z.string().nullable() }).nullable(),
  key: z.object({ kind: z.string(), created_at: z.string() }),
});

/**
 * A pasted CLI key as a login: `GET /api/cli/whoami` with it says whose it is, so the config gets
 * the tenant and email from the platform, never from the terminal. Errors say why it is refused
 * and never repeat the key.
 */
async function vouchedKey(apiBase: string, apiKey: string): Promise<LoginPayload> {
  const answer = await callPlatform({ apiBase, apiKey }, 'GET', '/api/cli/whoami', undefined, {
    rejected: `${apiBase} refused that key (revoked, or not one of its keys). Paste another.`,
    // Someone is waiting at the prompt: a platform that answered /healthz answers this at once.
    timeoutMs: REACH_TIMEOUT_MS,
  });
  const parsed = vouchSchema.safeParse(answer.body);
  if (answer.status !== 200 || !parsed.success) {
    throw new CliError(`${apiBase} could not check that key (GET /api/cli/whoami: ${answer.status}).`);
  }
  const { tenant, user, key } = parsed.data;
  if (key.kind !== 'cli') {
    throw new CliError(
      'That key is not a CLI key (an App Key is for a deployed tool). Paste a CLI key, or the login code.',
    );
  }
  return { apiKey, tenantId: tenant.id, appId: null, email: user?.email ?? null, issuedAt: key.created_at };
}

/** How long the reachability check waits: a platform answers its health check at once. */
const REACH_TIMEOUT_MS = 5_000;

/**
 * Asks the platform's health check before anyone waits on a browser: a mistyped `--api-base`
 * fails in seconds with the reason, not after the five-minute login timer.
 */
async function checkReachable(apiBase: string): Promise<void> {
  let response: Response;
  try {
    response = await fetch(`${apiBase}/healthz`, { signal: AbortSignal.timeout(REACH_TIMEOUT_MS) });
  } catch (error) {
    throw new CliError(
      `Could not reach ${apiBase} (${failureReason(error)}). Check the URL, or pass --api-base <url>.`,
      1,
      { cause: error },
    );
  }
  await response.body?.cancel().catch(() => {});
  // 503 is a platform whose database is briefly away: the login may still work in a moment.
  if (!response.ok && response.status !== 503) {
    throw new CliError(
      `${apiBase} does not answer like the platform (GET /healthz: ${response.status}). Check the URL, or pass --api-base <url>.`,
    );
  }
}
