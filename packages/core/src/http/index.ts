export {
  type BodyLimit,
  BodyTooLargeError,
  type FormFields,
  readBody,
  readBodyText,
  readFormFields,
} from './body.js';
export { type ClientIpOptions, type ConnectionInfo, clientIp, socketAddress } from './client-ip.js';
export {
  CORS_ALLOWED_HEADERS,
  CORS_METHODS,
  type CorsPolicy,
  corsHeaders,
  isOwnOrigin,
  ownDomainOf,
  preflightResponse,
} from './cors.js';
export { type CanonicalErrorFields, canonicalError, flatError, nestedError, stringError } from './errors.js';
export { describeIssues, type IssueFormat } from './issues.js';
export { createJsonLogger, describeError, type Logger, silentLogger } from './logger.js';
export {
  type RateLimitCounter,
  RateLimiter,
  type RateLimitRule,
  type RateLimitVerdict,
  type WindowHits,
} from './rate-limit.js';
export { requestIdFor } from './request-id.js';
export { formatSse, formatSseComment, SSE_HEADERS, type SseBlock } from './sse.js';
