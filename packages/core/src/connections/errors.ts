/** A refusal of a connections operation, with the HTTP status it maps to. Crosses the wire as a flat body. */
export class ConnectionError extends Error {
  override name = 'ConnectionError';
  constructor(
    readonly status: 400 | 403 | 404 | 409,
    message: string,
    readonly code: 'INVALID_REQUEST' | 'FORBIDDEN' | 'NOT_FOUND' | 'CONFLICT',
  ) {
    super(message);
  }
}

export const notFound = (what = 'Connection') => new ConnectionError(404, `${what} not found`, 'NOT_FOUND');
export const invalid = (message: string) => new ConnectionError(400, message, 'INVALID_REQUEST');
export const conflict = (message: string) => new ConnectionError(409, message, 'CONFLICT');
