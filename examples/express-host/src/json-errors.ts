/**
 * The host's last error handler: what Express would answer with its HTML page (a stack trace with
 * file paths, outside production) answers JSON in the shape of the host's other refusals,
 * `{ "code", "message" }` (the sign-in routes' `{ "message" }`, with a code to switch on). A body
 * that is not JSON, or JSON that is not an object, is 400 `invalid_json`, one past the parser's
 * limit 413 `payload_too_large`;
 * anything else is a 500 with a generic message, its cause logged.
 */
import { describeError, type Logger } from '@service/core/http';
import type { ErrorRequestHandler } from 'express';

/** body-parser's errors by `type`; its other client errors keep their own status. */
const BODY_ERRORS = new Map<string, { status: number; code: string; message: (limit: unknown) => string }>([
  [
    'entity.parse.failed',
    { status: 400, code: 'invalid_json', message: () => 'The request body is not valid JSON.' },
  ],
  [
    'entity.too.large',
    {
      status: 413,
      code: 'payload_too_large',
      message: (limit) =>
        Number.isSafeInteger(limit)
          ? `The request body is larger than ${limit} bytes.`
          : 'The request body is too large.',
    },
  ],
]);

/**
 * The error handler to mount after the host's routes.
 *
 * @example app.use(jsonErrorHandler(logger)) // `POST /login` with `{` answers 400 invalid_json
 */
export function jsonErrorHandler(logger: Logger): ErrorRequestHandler {
  return (error, _req, res, next) => {
    // Express's own handler closes a response already under way; nothing of it can be replaced.
    if (res.headersSent) {
      next(error);
      return;
    }
    if (error?.type === 'entity.parse.failed' && parsesAsJson(error.body)) {
      // Strict parsing refuses JSON that is not an object or an array (`null`, `"text"`, `1`).
      res.status(400).json({ code: 'invalid_json', message: 'The request body must be a JSON object.' });
      return;
    }
    const known = BODY_ERRORS.get(error?.type);
    if (known) {
      res.status(known.status).json({ code: known.code, message: known.message(error.limit) });
      return;
    }
    const status = Number(error?.status ?? error?.statusCode);
    if (error?.expose === true && status >= 400 && status < 500) {
      res.status(status).json({ code: 'invalid_request', message: 'The request could not be read.' });
      return;
    }
    logger.error('host.request_failed', describeError(error));
    res.status(500).json({ code: 'internal_error', message: 'Something went wrong.' });
  };
}

/** True when `body` (the text the parser refused, which it keeps on the error) is JSON after all. */
function parsesAsJson(body: unknown): boolean {
  if (typeof body !== 'string') return false;
  try {
    JSON.parse(body);
    return true;
  } catch {
    return false;
  }
}
