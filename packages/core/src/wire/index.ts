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
export { BASE_PATH, type WireContext } from './context.js';
export { createService, DEFAULT_TOOL_OUTPUT_CAP, type Service } from './create-service.js';
export { WIRE_ERROR_CODES, WireError, type WireErrorCode, wireError } from './errors.js';
export { CompositionError, type PrincipalResolver, type ServiceOptions } from './options.js';
export { APP_IMPORT_MEDIA_TYPE, RAW_UPLOAD_HEADER } from './pipeline.js';
export { UI_MESSAGE_STREAM_HEADERS } from './sse.js';
