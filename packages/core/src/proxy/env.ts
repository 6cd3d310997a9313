import type { ErrorShape } from '../http/errors.js';

/**
 * The Hono environment the proxy's handlers run in. Its host provides both variables: the
 * request id (logged and written on usage rows) and the error body shape its fault handler
 * answers with, which the proxy sets to `canonical` for its routes.
 */
export interface ProxyEnv {
  Variables: {
    requestId: string;
    errorShape: ErrorShape;
  };
}
