/**
 * `createService(options)`: the embedded application wire at `/api/service` as one
 * web-standard fetch handler (plus `wellKnown` for the door's origin-root discovery paths).
 *
 * Per request, in order: the MCP door's paths (when `mcp` is set), the base path, the URL's
 * encoding, the JSON gate, then the route; routes that need a user resolve the principal.
 *
 * @see docs/wire.md
 */
import type { LanguageModel, UIMessage } from 'ai';
import { Hono } from 'hono';
import { AnonymousSessions } from '../agent/anonymous.js';
import { ApprovalStore } from '../agent/approvals.js';
import { AuditLog } from '../agent/audit.js';
import { StoreBlobs } from '../agent/blobs.js';
import { FileStore } from '../agent/files.js';
import { GrantStore } from '../agent/grants.js';
import { agentSurface } from '../agent/overrides.js';
import { RunHub } from '../agent/run-hub.js';
import { ThreadStore } from '../agent/threads.js';
import type { AnyHostTool, ToolRegistry } from '../agent/tools.js';
import { createToolRegistry } from '../agent/tools.js';
import { type AutomationSettings, Automations } from '../automations/index.js';
import { createJsonLogger, describeError, type Logger } from '../http/logger.js';
import { requestIdFor } from '../http/request-id.js';
import { createStore, type Store } from '../store/index.js';
import { appToolCatalog } from './apps/app-checks.js';
import { DEFAULT_REBASE_TIME_LIMIT_MS, modelReplayer } from './apps/app-replay.js';
import { checkSeeds, type Seed } from './apps/app-seeds.js';
import { AppStore } from './apps/app-store.js';
import { appTools, DEFAULT_BUILD_TIME_LIMIT_MS } from './apps/app-tools.js';
import { TextChannels } from './channels.js';
import { BASE_PATH, type WireContext, type WireEnv } from './context.js';
import { loadDoor, type ServiceDoor, type WireDoor } from './door-loader.js';
import { asWireError, wireError } from './errors.js';
import {
  type AppReplayer,
  CompositionError,
  DEFAULT_MAX_BODY_BYTES,
  DEFAULT_MAX_CHAT_HISTORY_BYTES,
  DEFAULT_MAX_FILE_BYTES,
  DEFAULT_SCHEDULER_INTERVAL_MS,
  MIN_TICK_SECRET_LENGTH,
  type ServiceOptions,
  validateServiceOptions,
} from './options.js';
import { OrgSelections } from './orgs.js';
import { readOverrides } from './overrides.js';
import { checkEncoding, checkJsonGate, wirePath } from './pipeline.js';
import { approvalRoutes } from './routes/approvals.js';
import { appRoutes } from './routes/apps.js';
import { automationRoutes } from './routes/automations.js';
import { channelRoutes } from './routes/channels.js';
import { chatRoutes } from './routes/chat.js';
import { connectionRoutes } from './routes/connections.js';
import { developmentRoutes } from './routes/development.js';
import { fileRoutes } from './routes/files.js';
import { mcpClientRoutes } from './routes/mcp-clients.js';
import { orgRoutes } from './routes/orgs.js';
import { runRoutes } from './routes/runs.js';
import { statusRoutes } from './routes/status.js';
import { threadRoutes } from './routes/threads.js';
import { unavailableRoutes } from './routes/unavailable.js';

export interface Service {
  /** The wire: answers every request under `/api/service` (and the door's paths). */
  /**
   * `connection`: the adapter's knowledge of the TCP peer (`{ remoteAddress }` or the Node env),
   * and `bodyRewritten: true` when the body is not the sender's bytes (a body parser re-serialized
   * it): webhooks then answer 500 `raw_body_unavailable` instead of failing their signature.
   */
  fetch(request: Request, connection?: unknown): Promise<Response>;
  /** The door's origin-root discovery documents (`/.well-known/...`), or null to fall through. */
  wellKnown(request: Request): Promise<Response | null>;
  readonly context: WireContext;
  /**
   * With `mcp`: a user's MCP connections (the clients they approved), for the host's own account
   * pages or its account deletion; null without the door.
   */
  readonly door: ServiceDoor | null;
  /**
   * Stops taking turns (new ones answer 503 `unavailable` with `Retry-After`), lets turns in
   * flight finish for up to `graceMs` (default 0), cancels the rest, writes queued activity, and
   * closes the store when the service opened it.
   */
  close(options?: { graceMs?: number }): Promise<void>;
}

export const DEFAULT_TOOL_OUTPUT_CAP = 32_000;
const DEFAULT_MAX_STEPS = 8;
const DEFAULT_APPROVAL_TTL_MS = 60 * 60 * 1000;
const DEFAULT_RESUME_WINDOW_MS = 5 * 60 * 1000;
const DEFAULT_HEARTBEAT_MS = 15_000;

/**
 * Builds the wire. Options are validated here; a malformed composition throws a
 * `CompositionError` that says what to fix.
 *
 * @example
 * const service = await createService({
 *   principal: async (request) => (await session(request))?.user ?? null,
 *   model: openai('gpt-4o-mini'),
 *   tools: [{ name: 'list_orders', description: 'Lists orders', input: z.object({}), risk: 'read', execute: listOrders }],
 * });
 * app.use(toExpressHandler(service));
 */
export async function createService(options: ServiceOptions): Promise<Service> {
  validateServiceOptions(options);
  const env = options.env ?? process.env;
  const logger = options.logger ?? createJsonLogger();
  let tools: ReturnType<typeof createToolRegistry>;
  try {
    tools = createToolRegistry(options.tools ?? []);
  } catch (error) {
    throw new CompositionError(`createService: ${(error as Error).message}`, { cause: error });
  }
  const overrides = options.overrides === false ? undefined : (options.overrides ?? readOverrides(env));
  const appsOptions = typeof options.apps === 'object' ? options.apps : {};
  // Checked before the store opens: a refused seed document refuses the composition.
  const seeds =
    options.apps === false ? new Map() : checkSeeds(appsOptions.seeds ?? [], appToolCatalog(tools));
  const automationSettings = automationSettingsOf(options, env);
  const ownsStore = options.store === undefined;
  const store: Store = options.store ?? (await createStore());
  try {
    return await compose(
      options,
      { env, logger, tools, overrides, appsOptions, seeds, automationSettings },
      store,
      ownsStore,
    );
  } catch (error) {
    // A composition refused after the store opened leaves nothing open: no engine holding its folder.
    if (ownsStore) await store.close().catch(() => {});
    throw error;
  }
}

/** What `createService` checked before it opened the store. */
interface Checked {
  env: Record<string, string | undefined>;
  logger: Logger;
  tools: ToolRegistry;
  overrides: ReturnType<typeof readOverrides> | undefined;
  appsOptions: Exclude<ServiceOptions['apps'], boolean | undefined>;
  seeds: ReturnType<typeof checkSeeds>;
  automationSettings: AutomationSettings | null;
}

/** The service on `store`, which it closes on `close()` when it owns it. */
async function compose(
  options: ServiceOptions,
  { env, logger, tools, overrides, appsOptions, seeds, automationSettings }: Checked,
  store: Store,
  ownsStore: boolean,
): Promise<Service> {
  const db = store.db;
  const baseUrl = options.baseUrl ?? blankToUndefined(env.SERVICE_BASE_URL) ?? null;
  const audit = new AuditLog(db, logger);
  const threads = new ThreadStore(db);
  const files =
    options.files === false
      ? null
      : new FileStore(db, options.files?.blobs ?? new StoreBlobs(db), `${BASE_PATH}/files/`);
  const grants = new GrantStore(db);
  const approvals = new ApprovalStore(db, grants);
  const model = resolveModel(options.model, env);
  // A rebase's replay: the composition's, else the same model turns use.
  const replay = appsOptions.replay ?? modelReplayer(model.instance, tools);
  // One apps store for the routes and the agent's tools alike.
  const appStore = options.apps === false ? null : new AppStore(db);
  const buildTimeLimitMs = appsOptions.buildTimeLimitMs ?? DEFAULT_BUILD_TIME_LIMIT_MS;
  const rebaseTimeLimitMs = appsOptions.rebaseTimeLimitMs ?? DEFAULT_REBASE_TIME_LIMIT_MS;
  // What the agent and the door offer: the host's tools, then the service's own.
  const offered = createToolRegistry(options.tools ?? [], {
    service: appStore
      ? serviceTools(options, {
          appStore,
          tools,
          grants,
          audit,
          seeds,
          replay,
          buildTimeLimitMs,
          rebaseTimeLimitMs,
        })
      : [],
  });
  const surface = agentSurface(overrides, offered, logger);
  const toolOutputCap = options.toolOutputCap ?? DEFAULT_TOOL_OUTPUT_CAP;
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const runs = new RunHub(
    db,
    threads,
    approvals,
    {
      audit,
      threads,
      approvals,
      grants,
      tools: offered,
      agentSurface: surface,
      logger,
      model: model.instance,
      ...(options.system ? { system: options.system } : {}),
      toolOutputCap,
      ...(options.maxOutputTokens ? { maxOutputTokens: options.maxOutputTokens } : {}),
      ...(options.historyWindow ? { historyWindow: options.historyWindow } : {}),
      ...(files
        ? { inlineFiles: (owner: string, messages: UIMessage[]) => files.inlineForModel(owner, messages) }
        : {}),
      maxSteps: options.maxSteps ?? DEFAULT_MAX_STEPS,
      approvalTtlMs: options.approvalTtlMs ?? DEFAULT_APPROVAL_TTL_MS,
    },
    logger,
    { resumeWindowMs: options.resumeWindowMs ?? DEFAULT_RESUME_WINDOW_MS },
  );

  const automations = automationSettings && new Automations(db, audit, runs, logger, automationSettings);

  let door: WireDoor | null = null;
  /** Undoes what composing started when a later step fails: the run hub's sweep and the door. */
  const abandon = async () => {
    await runs.close();
    await door?.close();
  };
  if (options.mcp) {
    try {
      door = await loadDoor({
        mcp: options.mcp,
        oauth: options.oauth!,
        store,
        tools: offered,
        ...(options.actAs ? { actAs: options.actAs } : {}),
        overrides,
        logger,
        audit,
        env,
      });
    } catch (error) {
      await abandon();
      throw error;
    }
  }

  const context: WireContext = {
    storeHealth: { kind: store.kind, ping: () => store.ping() },
    audit,
    logger,
    resolvePrincipal: options.principal,
    tools,
    threads,
    runs,
    approvals,
    grants,
    actAs: options.actAs ?? null,
    model,
    development: options.development ?? env.NODE_ENV !== 'production',
    apps:
      appStore === null
        ? null
        : {
            store: appStore,
            reviewer: appsOptions.reviewer ?? null,
            seeds,
            replay,
            buildTimeLimitMs,
            rebaseTimeLimitMs,
          },
    automations,
    files,
    connections: options.connections ?? null,
    anonymous: options.anonymous ? new AnonymousSessions(db) : null,
    orgs: options.orgs ?? null,
    channels: options.channels?.length ? new TextChannels(db, runs, options.channels, logger) : null,
    orgSelections: new OrgSelections(db),
    maxFileBytes: (options.files !== false && options.files?.maxBytes) || DEFAULT_MAX_FILE_BYTES,
    mcp: door === null ? false : 'mode' in door && door.mode === 'broker' ? 'broker' : 'local',
    baseUrlSet: baseUrl !== null,
    baseUrl,
    toolOutputCap,
    historyWindow: options.historyWindow ?? null,
    maxOutputTokens: options.maxOutputTokens ?? null,
    heartbeatMs: options.heartbeatMs ?? DEFAULT_HEARTBEAT_MS,
    maxBodyBytes,
    maxChatHistoryBytes:
      options.maxChatHistoryBytes ?? Math.max(DEFAULT_MAX_CHAT_HISTORY_BYTES, maxBodyBytes),
  };

  if (context.apps) {
    try {
      // Each startup's declaration replaces the last: a slot no longer configured stops being declared.
      await context.apps.store.declareSlots(appsOptions.slots ?? []);
    } catch (error) {
      await abandon();
      throw error;
    }
  }

  if (!context.baseUrlSet) {
    // Without the host's public URL, tools never get the user's credentials: say so once.
    audit.record(null, 'present-credentials-not-forwarded', { reason: 'untrusted-host-origin' });
  }

  automations?.startScheduler();

  const app = new Hono<WireEnv>().basePath(BASE_PATH);
  // The request id comes in the env the pipeline passes; make it a context variable.
  app.use(async (c, next) => {
    c.set('requestId', (c.env as { requestId?: string } | undefined)?.requestId ?? requestIdFor(c.req.raw));
    c.set('orgsAvailable', context.orgs !== null);
    await next();
    // The anonymous session's cookie goes on whatever answer the route made, streams included.
    for (const cookie of c.get('setCookies') ?? []) {
      try {
        c.res.headers.append('set-cookie', cookie);
      } catch {
        // Immutable headers (a piped response): the session is set again on the next request.
      }
    }
  });
  app.route('/', statusRoutes(context));
  app.route('/', developmentRoutes(context));
  app.route('/', unavailableRoutes(context));
  if (context.apps) app.route('/', appRoutes(context, context.apps));
  if (files) app.route('/', fileRoutes(context, files, context.maxFileBytes));
  if (context.connections) app.route('/', connectionRoutes(context, context.connections));
  if (context.orgs) app.route('/', orgRoutes(context, context.orgs));
  if (context.channels) app.route('/', channelRoutes(context, context.channels));
  app.route('/', automationRoutes(context));
  app.route('/', chatRoutes(context));
  app.route('/', threadRoutes(context));
  app.route('/', runRoutes(context));
  app.route('/', approvalRoutes(context));
  if (door) app.route('/', mcpClientRoutes(context, door));
  app.notFound(() => wireError('route_not_found', 'No such route.'));
  app.onError((error, c) =>
    failure(context, error, c.get('requestId') ?? requestIdFor(c.req.raw), c.req.path),
  );

  const handle = async (request: Request, connection?: unknown): Promise<Response> => {
    const requestId = requestIdFor(request);
    if (door) {
      const answer = await door.handle(request, connection);
      if (answer) {
        setHeader(answer, 'x-request-id', requestId);
        return answer;
      }
    }
    let url: URL;
    try {
      url = new URL(request.url);
    } catch {
      return wireError('malformed_url', 'The URL is malformed.', { 'x-request-id': requestId });
    }
    const path = wirePath(url.pathname);
    if (path === null) return wireError('route_not_found', 'No such route.', { 'x-request-id': requestId });
    try {
      checkEncoding(url);
      checkJsonGate(request.method, path, request.headers);
    } catch (error) {
      return failure(context, error, requestId, url.pathname);
    }
    const response = await app.fetch(request, { requestId, bodyRewritten: isBodyRewritten(connection) });
    setHeader(response, 'x-request-id', requestId);
    return response;
  };

  return {
    fetch: handle,
    wellKnown: async (request) => {
      const answer = door ? await door.wellKnown(request) : null;
      if (answer) setHeader(answer, 'x-request-id', requestIdFor(request));
      return answer;
    },
    context,
    door: door && {
      consentsOf: (subject) => door.consentsOf(subject),
      withdrawConsent: (subject, clientId) => door.withdrawConsent(subject, clientId),
      revokeUser: (subject) => door.revokeUser(subject),
    },
    close: async (closeOptions = {}) => {
      await automations?.close();
      await runs.close(closeOptions);
      await door?.close();
      await audit.flush();
      if (ownsStore) await store.close();
    },
  };
}

function failure(ctx: WireContext, error: unknown, requestId: string, path: string): Response {
  const headers = { 'x-request-id': requestId };
  const known = asWireError(error);
  if (known) {
    if (known.code === 'unavailable') {
      // The store is away (an outage, not a bug): one line without a stack per refused request.
      ctx.logger.warn('store unavailable', {
        request_id: requestId,
        path,
        error_message: known.cause instanceof Error ? known.cause.message : known.message,
      });
    } else if (known.status >= 500) {
      ctx.logger.error('wire error', {
        request_id: requestId,
        path,
        code: known.code,
        ...describeError(known),
      });
    }
    return wireError(known.code, known.message, { ...headers, ...known.headers }, known.fields);
  }
  ctx.logger.error('unhandled wire error', { request_id: requestId, path, ...describeError(error) });
  return wireError('internal_error', `Internal server error (request id ${requestId}).`, headers);
}

function isBodyRewritten(connection: unknown): boolean {
  return (connection as { bodyRewritten?: unknown } | undefined)?.bodyRewritten === true;
}

function setHeader(response: Response, name: string, value: string): void {
  try {
    response.headers.set(name, value);
  } catch {
    // Immutable headers (a piped response): the id is in the log either way.
  }
}

/**
 * The model: the composition's, else the ladder: `SERVICE_MODEL` (a gateway model id such as
 * `openai/gpt-4o-mini`) when `AI_GATEWAY_API_KEY` is set. Else none: turns fail with a message.
 */
function resolveModel(
  model: LanguageModel | undefined,
  env: Record<string, string | undefined>,
): WireContext['model'] {
  if (model) return { instance: model, source: 'custom' };
  const id = blankToUndefined(env.SERVICE_MODEL);
  if (id && blankToUndefined(env.AI_GATEWAY_API_KEY)) return { instance: id, source: 'ladder' };
  return { instance: null, source: 'ladder' };
}

/** The automations' settings (null when they are off), checked before anything opens. */
function automationSettingsOf(
  options: ServiceOptions,
  env: Record<string, string | undefined>,
): AutomationSettings | null {
  if (options.automations === false) return null;
  const given = typeof options.automations === 'object' ? options.automations : {};
  const tickSecret = given.tickSecret ?? blankToUndefined(env.SERVICE_TICK_SECRET);
  // The option is checked by the options schema; the variable gets the same rule here.
  if (tickSecret !== undefined && tickSecret.length < MIN_TICK_SECRET_LENGTH) {
    throw new CompositionError(
      `SERVICE_TICK_SECRET must be at least ${MIN_TICK_SECRET_LENGTH} characters: a short secret can be guessed`,
    );
  }
  const scheduler = given.scheduler;
  const schedulerIntervalMs =
    scheduler === true ? DEFAULT_SCHEDULER_INTERVAL_MS : scheduler ? scheduler.intervalMs : undefined;
  return {
    ...(given.webhooks ? { webhooks: given.webhooks } : {}),
    ...(tickSecret ? { tickSecret } : {}),
    ...(schedulerIntervalMs ? { schedulerIntervalMs } : {}),
  };
}

/** The service's own tools: the apps tools (only composed when apps are on). */
function serviceTools(
  options: ServiceOptions,
  deps: {
    appStore: AppStore;
    tools: ToolRegistry;
    grants: GrantStore;
    audit: AuditLog;
    seeds: ReadonlyMap<string, Seed>;
    replay: AppReplayer;
    buildTimeLimitMs: number;
    rebaseTimeLimitMs: number;
  },
): AnyHostTool[] {
  const productName = typeof options.mcp === 'object' ? options.mcp.productName : undefined;
  return appTools({
    store: deps.appStore,
    hostTools: deps.tools,
    calls: { grants: deps.grants, audit: deps.audit },
    seeds: deps.seeds,
    replay: deps.replay,
    buildTimeLimitMs: deps.buildTimeLimitMs,
    rebaseTimeLimitMs: deps.rebaseTimeLimitMs,
    ...(typeof productName === 'string' && productName.trim() ? { productName: productName.trim() } : {}),
    appUrl: (appId) => (typeof options.apps === 'object' && options.apps.openUrl?.(appId)) || null,
  });
}

function blankToUndefined(value: string | undefined): string | undefined {
  return value && value.trim() !== '' ? value.trim() : undefined;
}
