/** `@service/core/wire`: the embedded application wire a host mounts at `/api/service`. */
export {
  type ActAs,
  type ActAsGrant,
  type AnyHostTool,
  defineTool,
  type HostTool,
  type Principal,
  type ToolContext,
  type ToolRisk,
} from '../agent/tools.js';
export { signWebhook } from '../automations/index.js';
export { BASE_PATH } from './context.js';
export { createService, type Service } from './create-service.js';
export { WIRE_ERROR_CODES, type WireErrorCode } from './errors.js';
export { CompositionError, type PrincipalResolver, type ServiceOptions } from './options.js';
