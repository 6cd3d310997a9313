/** `@service/core/agent`: host tools (`defineTool`) and the registry the wire and the door share. */

export { type Overrides, overridesSchema } from './overrides.js';
export {
  type ActAs,
  type ActAsGrant,
  type AnyHostTool,
  createToolRegistry,
  defineTool,
  type HostTool,
  type Principal,
  type ToolAudience,
  type ToolContext,
  ToolDefinitionError,
  type ToolInputStream,
  type ToolRegistry,
  type ToolRisk,
} from './tools.js';
