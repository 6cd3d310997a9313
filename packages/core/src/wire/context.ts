import type { LanguageModel } from 'ai';
import type { Context } from 'hono';
import type { Kysely } from 'kysely';
import type { ApprovalStore } from '../agent/approvals.js';
import type { AuditLog } from '../agent/audit.js';
import type { GrantStore } from '../agent/grants.js';
import type { RunHub } from '../agent/run-hub.js';
import type { ThreadStore } from '../agent/threads.js';
import type { ActAs, Principal, ToolRegistry } from '../agent/tools.js';
import type { Logger } from '../http/logger.js';
import type { Database } from '../store/database.js';
import type { Store } from '../store/index.js';
import type { AutomationsOptions, PrincipalResolver } from './options.js';

/** The fixed mount point of the wire. */
export const BASE_PATH = '/api/service';

/** Everything a wire route needs; built once per service. */
export interface WireContext {
  store: Store;
  db: Kysely<Database>;
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
  apps: boolean;
  automations: (AutomationsOptions & { tickSecret?: string }) | null;
  mcp: 'local' | 'broker' | false;
  /** Whether SERVICE_BASE_URL (or the baseUrl option) is set. */
  baseUrlSet: boolean;
  baseUrl: string | null;
  toolOutputCap: number;
  historyWindow: number | null;
  maxOutputTokens: number | null;
  heartbeatMs: number;
  maxBodyBytes: number;
}

export interface WireEnv {
  Variables: {
    requestId: string;
    principal: Principal;
  };
}

export type WireCtx = Context<WireEnv>;
