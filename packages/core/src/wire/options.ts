/**
 * `createService` options and their validation. A malformed composition fails at construction
 * with a message that says what to fix, never later on a request.
 *
 * @see docs/wire.md "Composition"
 */
import type { LanguageModel } from 'ai';
import { z } from 'zod';
import type { BlobStore } from '../agent/blobs.js';
import type { Overrides } from '../agent/overrides.js';
import type { ActAs, AnyHostTool, Principal } from '../agent/tools.js';
import type { AppDocument } from '../apps/index.js';
import { WEBHOOK_SCHEMES, type WebhookSource } from '../automations/index.js';
import { describeIssues } from '../http/issues.js';
import type { Logger } from '../http/logger.js';
import type { Store } from '../store/index.js';
import type { TextChannelAdapter } from './channels.js';
import { isWireConnections, type WireConnections } from './connections.js';
import { isWireOrgs, type WireOrgs } from './orgs.js';

/** The host's resolver of the signed-in user; null when nobody is signed in. */
/** Shortest secret `POST /tick` accepts, from the options or `SERVICE_TICK_SECRET`. */
export const MIN_TICK_SECRET_LENGTH = 16;

export type PrincipalResolver = (request: Request) => Principal | null | Promise<Principal | null>;

export interface AutomationsOptions {
  /** Bearer secret of `POST /tick`. Default `SERVICE_TICK_SECRET`; unset refuses every tick. */
  tickSecret?: string;
  /**
   * Webhook sources and their verification: a secret (standard-webhooks, HMAC-SHA256 over
   * `id.timestamp.body`), or `{ scheme: 'github' | 'stripe', secret }` (GitHub's
   * `X-Hub-Signature-256`, Stripe's `Stripe-Signature`).
   */
  webhooks?: Record<string, WebhookSource>;
  /**
   * The built-in scheduler for single-process hosts: `true` fires due schedules every 30 s, or
   * `{ intervalMs }` (1 s to 1 hour). Off by default: an outside scheduler calls `POST /tick`.
   */
  scheduler?: boolean | { intervalMs: number };
}

export const DEFAULT_SCHEDULER_INTERVAL_MS = 30_000;

export interface AppsOptions {
  /**
   * Who may review review-kind remixes (`/apps/review-queue*`): called with the signed-in user
   * (never an anonymous visitor). Unset: nobody, and the review routes answer 403
   * `reviewer_required`.
   */
  reviewer?: (user: Principal) => boolean | Promise<boolean>;
  /**
   * Slots the host's pages have, declared here rather than reported by the pages: listed from
   * startup, never expiring, and never moved or relabelled by a page's report. Each startup
   * replaces the previous declaration.
   */
  slots?: DeclaredSlot[];
  /**
   * Host components a person may remix (`POST /apps/seed`), each with the app document their
   * remix starts from. Checked at startup against the host's tools: a document that fails the
   * checks refuses the composition.
   */
  seeds?: AppSeed[];
  /**
   * Where a person opens one of their apps in the host (its page's URL, absolute). Over the MCP
   * door, `service_apps_open` answers a card that links there. Unset: the door answers words only.
   */
  openUrl?: (appId: string) => string;
  /**
   * How a remix's wishes are replayed onto its component's current seed (`rebase-pin`): called
   * once per wish, in order, with the document so far; answers the next document, which is
   * checked as any build is. Unset: the service's language model, one call per wish.
   */
  replay?: AppReplayer;
  /**
   * How long a build's checks (one real run of each query of the document) may take, in
   * milliseconds (default 20 000). Past it the build fails with "the build timed out" and nothing
   * is saved; a slot being built stops saying so.
   */
  buildTimeLimitMs?: number;
  /**
   * How long a rebase's whole replay (every wish of the trail, each one call of the replayer and
   * its checks) may take, in milliseconds (default 120 000). Past it the rebase fails as
   * `rebase_failed` with the counts, and nothing is written.
   */
  rebaseTimeLimitMs?: number;
}

/** One step of a rebase's replay: the document so far and the wish to apply to it. */
export interface AppReplayStep {
  document: AppDocument;
  wish: string;
  signal?: AbortSignal;
}

/** Answers the document `step.wish` makes of `step.document`; a throw or no answer fails the wish. */
export type AppReplayer = (step: AppReplayStep) => Promise<unknown>;

export interface DeclaredSlot {
  /** 1–128 of `A-Z a-z 0-9 . _ : -`, starting with a letter or digit. */
  id: string;
  /** The host page that shows it (`/orders`). */
  page: string;
  label: string;
}

export interface AppSeed {
  /** The component's key (the baseline a remix is forked from); same rule as a slot id. */
  component: string;
  /** The name a person's remix starts with. */
  name: string;
  /** The app document a remix starts from; its content hash is the baseline's hash. */
  document: unknown;
  /** A review-kind remix: the host's original serves until a reviewer approves a version. */
  review?: boolean;
  /**
   * The hash `service sync` captured for the component's `<Remixable>` wrapper (its entry in
   * `.service/remixables.json`; `remixableHashes()` reads them). Set, it is part of the baseline's
   * hash: changing the wrapped component and syncing again makes remixes drift, as changing the
   * document does.
   */
  sourceHash?: string;
}

/** Slot ids and seed component keys. */
export const SLOT_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
export const SLOT_ID_RULE = 'must be 1-128 of A-Z a-z 0-9 . _ : - (starting with a letter or digit)';

export interface FilesOptions {
  maxBytes?: number;
  blobs?: BlobStore;
}

export const DEFAULT_MAX_FILE_BYTES = 25 * 1024 * 1024;

export interface ServiceOptions {
  /** The shared store. Default: `createStore()` (PGlite at `.service/data`, or `DATABASE_URL`). */
  store?: Store;
  /** Required: who is calling. Return null when nobody is signed in (the wire answers 403). */
  principal: PrincipalResolver;
  /** An AI SDK language model. Unset: the model ladder (environment settings). */
  model?: LanguageModel;
  /** System prompt of every turn. */
  system?: string;
  /** Host tools offered to the agent (and to the MCP door); see `defineTool`. */
  tools?: AnyHostTool[];
  /** How tools called from away (the MCP door) reach host APIs as the user. */
  actAs?: ActAs;
  /** Development mode: doctor and sync routes answer. Default `NODE_ENV !== 'production'`. */
  development?: boolean;
  /** Characters of one tool result the model sees (default 32000; 0 disables truncation). */
  toolOutputCap?: number;
  /** Output token limit of each model step. */
  maxOutputTokens?: number;
  /** Last N whole messages re-sent per turn (default: all). Tool calls and results never split. */
  historyWindow?: number;
  /** Model steps per turn at most (default 8). */
  maxSteps?: number;
  /**
   * Apps routes (default on): `{ reviewer }` says who may review, `slots` declares slots, `seeds`
   * the components a person may remix; `false` unmounts them.
   */
  apps?: boolean | AppsOptions;
  /**
   * Files routes (default on): `maxBytes`, the largest file (default 25 MiB), and `blobs`, where
   * the bytes go (default the store; `new S3Blobs(...)` for a bucket). `false` unmounts them.
   */
  files?: false | FilesOptions;
  /**
   * Where users' connections live: the host's own source (`kind: 'byo'`) or the platform's
   * (`kind: 'cloud'`). Unset: the connections routes answer 501 and `/status` says `false`.
   */
  connections?: WireConnections;
  /**
   * Anonymous sessions (default false): a visitor nobody signed in gets a cookie and keeps
   * threads and files, adopted into their account on their first signed-in request.
   */
  anonymous?: boolean;
  /**
   * Organizations: a source of the workspaces users belong to (the platform's, or the host's).
   * Unset: `/orgs` and `?org=` answer `402 cloud_required`.
   */
  orgs?: WireOrgs;
  /**
   * Text channel adapters (`webhookTextChannel(...)` or your own): mounts `/channels/text*`, and
   * `service.context.channels.receive(...)` takes inbound text.
   */
  channels?: TextChannelAdapter[];
  /** Automations routes: tick and webhooks (default true). */
  automations?: boolean | AutomationsOptions;
  /** The MCP door: `true` or its options object. Needs `oauth`. */
  mcp?: true | Record<string, unknown>;
  /** The host OAuth adapter the door signs users in with. */
  oauth?: Record<string, unknown>;
  /** Public URL of the host (with any path prefix). Default `SERVICE_BASE_URL`. */
  baseUrl?: string;
  logger?: Logger;
  /**
   * Tool curation (`surfaces.agent`, `surfaces.mcp`, titles). Default: `.service/overrides.json`
   * (or `SERVICE_OVERRIDES_PATH`) when present; `false` ignores the file.
   */
  overrides?: Overrides | false;
  /** How long a parked approval waits for a decision (default 60 minutes). */
  approvalTtlMs?: number;
  /** How long a turn keeps running with no client reading it (default 5 minutes). */
  resumeWindowMs?: number;
  /** Silence after which the turn stream sends a keepalive comment (default 15 s). */
  heartbeatMs?: number;
  /** Largest JSON body accepted (default 1 MiB); for `POST /chat`, largest last message. */
  maxBodyBytes?: number;
  /**
   * Largest `POST /chat` body, the history useChat re-sends included (default 64 MiB, and never
   * below `maxBodyBytes`). Only the last message and the other fields are held.
   */
  maxChatHistoryBytes?: number;
  /** Environment to read settings from. Default `process.env`. */
  env?: Record<string, string | undefined>;
}

export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;
export const DEFAULT_MAX_CHAT_HISTORY_BYTES = 64 * 1024 * 1024;

/** Thrown by `createService` for a malformed composition; the message says what to fix. */
export class CompositionError extends Error {
  override name = 'CompositionError';
  readonly code = 'ERR_SERVICE_COMPOSITION';
}

const fn = (what: string) =>
  z.custom<(...args: never[]) => unknown>((v) => typeof v === 'function', { message: `must be ${what}` });
const positiveInt = z.number().int().positive();

const automationsSchema = z.object({
  tickSecret: z
    .string()
    .min(MIN_TICK_SECRET_LENGTH, `must be at least ${MIN_TICK_SECRET_LENGTH} characters`)
    .optional(),
  webhooks: z
    .record(
      z.string().regex(/^[a-z0-9-]{1,64}$/),
      z.union(
        [z.string().min(16), z.object({ scheme: z.enum(WEBHOOK_SCHEMES), secret: z.string().min(16) })],
        {
          message: `must be a secret of at least 16 characters, or { scheme: ${WEBHOOK_SCHEMES.map((s) => `'${s}'`).join(' | ')}, secret } with a secret of at least 16 characters`,
        },
      ),
    )
    .optional(),
  scheduler: z
    .union([z.boolean(), z.object({ intervalMs: z.number().int().min(1000).max(3_600_000) })], {
      message: 'must be true, false or { intervalMs } between 1000 and 3600000',
    })
    .optional(),
});

const appsSchema = z.strictObject({
  reviewer: fn('a function reviewer(user) returning a boolean').optional(),
  openUrl: fn('a function openUrl(appId) returning the URL of the host page that shows the app').optional(),
  replay: fn('a function replay({ document, wish, signal }) answering the next app document').optional(),
  buildTimeLimitMs: z.number().int().min(100).max(600_000).optional(),
  rebaseTimeLimitMs: z.number().int().min(100).max(3_600_000).optional(),
  slots: z
    .array(
      z.strictObject({
        id: z.string().regex(SLOT_ID, SLOT_ID_RULE),
        page: z.string().trim().min(1).max(500),
        label: z.string().trim().min(1).max(200),
      }),
    )
    .max(200)
    .refine((list) => new Set(list.map((s) => s.id)).size === list.length, 'slot ids must be unique')
    .optional(),
  seeds: z
    .array(
      z.strictObject({
        component: z.string().regex(SLOT_ID, SLOT_ID_RULE),
        name: z.string().trim().min(1).max(200),
        document: z.unknown(),
        review: z.boolean().optional(),
        sourceHash: z
          .string()
          .regex(/^[0-9a-f]{64}$/, 'must be a sha256 in lowercase hex, as service sync writes it')
          .optional(),
      }),
    )
    .max(200)
    .refine(
      (list) => new Set(list.map((s) => s.component)).size === list.length,
      'seed components must be unique',
    )
    .optional(),
});

const optionsSchema = z.object({
  store: z
    .custom<Store>(
      (v) => typeof v === 'object' && v !== null && 'db' in v && typeof (v as Store).close === 'function',
      { message: 'must be a store from createStore()' },
    )
    .optional(),
  principal: fn('a function principal(request) returning the signed-in user or null'),
  model: z
    .custom<LanguageModel>(
      (v) =>
        (typeof v === 'string' && v.trim() !== '') ||
        (typeof v === 'object' && v !== null && 'specificationVersion' in v && 'doStream' in v),
      { message: 'must be an AI SDK LanguageModel (a provider model or a gateway model id)' },
    )
    .optional(),
  system: z.string().optional(),
  tools: z.array(z.unknown(), { message: 'must be an array of tools' }).optional(),
  actAs: fn('a function actAs(principal, grant)').optional(),
  development: z.boolean().optional(),
  toolOutputCap: z.number().int().min(0, 'must be 0 (no truncation) or a positive integer').optional(),
  maxOutputTokens: positiveInt.optional(),
  historyWindow: positiveInt.optional(),
  maxSteps: positiveInt.max(100).optional(),
  // A union would fail as a whole ("Invalid input"); the object's own issues name the option.
  apps: z
    .custom<boolean | AppsOptions>()
    .superRefine((value, ctx) => {
      if (typeof value === 'boolean') return;
      const parsed = appsSchema.safeParse(value);
      for (const issue of parsed.success ? [] : parsed.error.issues) {
        ctx.addIssue({ code: 'custom', message: issue.message, path: issue.path });
      }
    })
    .optional(),
  anonymous: z.boolean().optional(),
  channels: z
    .array(
      z.object({
        name: z.string().regex(/^[a-z][a-z0-9-]{0,31}$/, 'must be a channel name (a-z, 0-9, -)'),
        send: fn('a function send(message)'),
      }),
    )
    .refine((list) => new Set(list.map((a) => a.name)).size === list.length, 'channel names must be unique')
    .optional(),
  orgs: z
    .custom<WireOrgs>(isWireOrgs, {
      message: "must be an organizations source: { kind: 'byo' | 'cloud', list, members }",
    })
    .optional(),
  connections: z
    .custom<WireConnections>(isWireConnections, {
      message:
        "must be a connections source: { kind: 'byo' | 'cloud', catalog, list, initiate, get, disconnect }",
    })
    .optional(),
  files: z
    .union([
      z.literal(false),
      z.object({
        maxBytes: positiveInt.max(Number.MAX_SAFE_INTEGER).optional(),
        blobs: z
          .custom<BlobStore>(
            (v) =>
              typeof v === 'object' &&
              v !== null &&
              ['put', 'get', 'delete'].every((m) => typeof (v as Record<string, unknown>)[m] === 'function'),
            { message: 'must be a BlobStore (put, get, delete)' },
          )
          .optional(),
      }),
    ])
    .optional(),
  // A union would fail as a whole ("Invalid input"); the object's own issues name the option.
  automations: z
    .custom<boolean | AutomationsOptions>()
    .superRefine((value, ctx) => {
      if (typeof value === 'boolean') return;
      const parsed = automationsSchema.safeParse(value);
      for (const issue of parsed.success ? [] : parsed.error.issues) {
        ctx.addIssue({ code: 'custom', message: issue.message, path: issue.path });
      }
    })
    .optional(),
  mcp: z
    .union([z.literal(true), z.record(z.string(), z.unknown())], {
      message: 'must be true or an options object',
    })
    .optional(),
  oauth: z.record(z.string(), z.unknown(), { message: 'must be the host OAuth adapter object' }).optional(),
  baseUrl: z.url({ protocol: /^https?$/ }).optional(),
  logger: z.custom<Logger>((v) => typeof v === 'object' && v !== null && 'error' in v).optional(),
  overrides: z.union([z.literal(false), z.record(z.string(), z.unknown())]).optional(),
  approvalTtlMs: positiveInt.optional(),
  resumeWindowMs: positiveInt.optional(),
  heartbeatMs: positiveInt.optional(),
  maxBodyBytes: positiveInt.optional(),
  maxChatHistoryBytes: positiveInt.optional(),
  // process.env is not a plain object, so only its shape is checked.
  env: z
    .custom<Record<string, string | undefined>>((v) => typeof v === 'object' && v !== null, {
      message: 'must be an object of environment variables',
    })
    .optional(),
});

/** Checks the options; throws a `CompositionError` listing every problem. */
export function validateServiceOptions(options: unknown): asserts options is ServiceOptions {
  if (typeof options !== 'object' || options === null) {
    throw new CompositionError('createService(options): options must be an object with at least principal');
  }
  const parsed = optionsSchema.safeParse(options);
  const problems = parsed.success
    ? []
    : [describeIssues(parsed.error, { emptyPath: 'options', separator: ' ' })];
  const value = options as ServiceOptions;
  if (
    typeof value.maxChatHistoryBytes === 'number' &&
    value.maxChatHistoryBytes <
      (typeof value.maxBodyBytes === 'number' ? value.maxBodyBytes : DEFAULT_MAX_BODY_BYTES)
  ) {
    problems.push(
      'maxChatHistoryBytes is below maxBodyBytes: a chat body holds at least one message, so raise maxChatHistoryBytes or lower maxBodyBytes',
    );
  }
  if (value.mcp && !value.oauth) {
    problems.push(
      'mcp is set but oauth is missing: pass oauth (the host OAuth adapter with session() and principal()) so the MCP door can sign users in, or remove mcp',
    );
  }
  if (problems.length > 0) {
    throw new CompositionError(`createService: ${problems.join('; ')}`);
  }
}
