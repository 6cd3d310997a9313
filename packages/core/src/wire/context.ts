import type { LanguageModel } from 'ai';
import type { Context } from 'hono';
import type { AnonymousSessions } from '../agent/anonymous.js';
import type { ApprovalStore } from '../agent/approvals.js';
import type { AuditLog } from '../agent/audit.js';
import type { FileStore } from '../agent/files.js';
import type { GrantStore } from '../agent/grants.js';
import type { RunHub } from '../agent/run-hub.js';
import type { ThreadStore } from '../agent/threads.js';
import type { ActAs, Principal, ToolRegistry } from '../agent/tools.js';
import type { Automations } from '../automations/index.js';
import type { Logger } from '../http/logger.js';
import type { Store } from '../store/index.js';
import type { Seed } from './apps/app-seeds.js';
import type { AppStore } from './apps/app-store.js';
import type { TextChannels } from './channels.js';
import type { WireConnections } from './connections.js';
import type { AppReplayer, AppsOptions, PrincipalResolver } from './options.js';
import type { OrgSelections, WireOrgs } from './orgs.js';

/** The fixed mount point of the wire. */
export const BASE_PATH = '/api/service';

/** Everything a wire route needs: domain services and settings, built once per service. */
export interface WireContext {
  /** What `/status` knows of the store: its kind and whether it answers. */
  storeHealth: Pick<Store, 'kind' | 'ping'>;
  audit: AuditLog;
  logger: Logger;
  resolvePrincipal: PrincipalResolver;
  tools: ToolRegistry;
  threads: ThreadStore;
  runs: RunHub;
  approvals: ApprovalStore;
  grants: GrantStore;
  actAs: ActAs | null;
  model: { instance: LanguageModel | null; source: 'custom' | 'ladder' };
  development: boolean;
  /** Null when the composition switched apps off (`apps: false`): the routes are then unmounted. */
  apps: WireApps | null;
  /** Null when the composition switched files off (`files: false`). */
  files: FileStore | null;
  /** Largest file an upload (or a chat message's file part) may hold. */
  maxFileBytes: number;
  /** The connections source (`connections` option), or null: the routes then answer 501. */
  connections: WireConnections | null;
  /** Anonymous sessions (`anonymous: true`), or null: nobody signed in is then a 403. */
  anonymous: AnonymousSessions | null;
  /** The organizations source (`orgs` option), or null: `/orgs` and `?org=` are then 402. */
  orgs: WireOrgs | null;
  orgSelections: OrgSelections;
  /** Text channels (`channels` option), or null: `/channels/text*` is then not mounted. */
  channels: TextChannels | null;
  /** Null when the composition switched automations off. */
  automations: Automations | null;
  mcp: 'local' | 'broker' | false;
  /** Whether SERVICE_BASE_URL (or the baseUrl option) is set. */
  baseUrlSet: boolean;
  baseUrl: string | null;
  toolOutputCap: number;
  historyWindow: number | null;
  maxOutputTokens: number | null;
  heartbeatMs: number;
  maxBodyBytes: number;
  maxChatHistoryBytes: number;
}

export interface WireApps {
  store: AppStore;
  /** The composition's `apps.reviewer`, or null: nobody may review. */
  reviewer: NonNullable<AppsOptions['reviewer']> | null;
  /** The components a person may remix (`apps.seeds`), checked, by component key. */
  seeds: ReadonlyMap<string, Seed>;
  /** How a rebase replays a remix's wishes: `apps.replay`, else the service's model. */
  replay: AppReplayer;
  /** How long a build may take (`apps.buildTimeLimitMs`): a slot build older than this is gone. */
  buildTimeLimitMs: number;
  /** How long a rebase's whole replay may take (`apps.rebaseTimeLimitMs`). */
  rebaseTimeLimitMs: number;
}

export interface WireEnv {
  Variables: {
    requestId: string;
    principal: Principal;
    /** The signed-in user (or anonymous visitor), whatever workspace the request acts in. */
    user: Principal;
    /** Whether organizations are available (the `orgs` source is set). */
    orgsAvailable: boolean;
    /** `Set-Cookie` values the answer carries (the anonymous session's). */
    setCookies: string[];
  };
}

export type WireCtx = Context<WireEnv>;
