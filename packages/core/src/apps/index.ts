/**
 * Apps: the document model of the screens the agent builds from host data: the app document,
 * the Kit of components it may use, its validation against the host's tools and against a real
 * run, and its content hash.
 *
 * @see docs/apps.md
 */
export { contentHash } from './content-hash.js';
export {
  APP_DOCUMENT_VERSION,
  type AppDocument,
  type AppNode,
  type AppQuery,
  appDocument,
  type Binding,
  isQueryBinding,
  isStateBinding,
  type JsonLiteral,
  type QueryBinding,
  type StateBinding,
} from './document.js';
export type { JsonSchema } from './json-schema.js';
export {
  type ButtonAction,
  KIT,
  KIT_NAMES,
  type KitCatalogEntry,
  type KitComponent,
  kitCatalog,
  kitComponent,
} from './kit.js';
export { APP_DOCUMENT_LIMITS } from './limits.js';
export { partialDocument } from './partial.js';
export { formatPath, type PathSegment, parsePath, resolvePath } from './path.js';
export type { Problem } from './problems.js';
export { checkAgainstRun, type RunCheck } from './run-check.js';
export { toolsOf } from './uses.js';
export { type AppTool, type AppToolCatalog, type Validation, validateDocument } from './validate.js';
