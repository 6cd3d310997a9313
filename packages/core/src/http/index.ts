/** `@service/core/http`: the logger every surface takes (JSON lines, or silent). */

export { describeIssues } from './issues.js';
export { createJsonLogger, describeError, type Logger, silentLogger } from './logger.js';
