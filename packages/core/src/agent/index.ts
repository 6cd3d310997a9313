export type { ApprovalView } from './approvals.js';
export { canonicalJson, grantView } from './grants.js';
export { capToolOutput, windowMessages } from './history.js';
export type { RunView } from './run-rows.js';
export type { ThreadDetail, ThreadSummary } from './threads.js';
export {
  type ActAs,
  type ActAsGrant,
  type AnyHostTool,
  createToolRegistry,
  defineTool,
  type Grant,
  type GrantScope,
  type HostTool,
  type ParsedInput,
  type Principal,
  type RegisteredTool,
  type ToolAudience,
  type ToolContext,
  ToolDefinitionError,
  type ToolRegistry,
  type ToolRisk,
} from './tools.js';
