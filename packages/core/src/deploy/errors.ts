/** A refusal of a deploy or app operation, with its status and flat-body code. */
export class DeployError extends Error {
  override name = 'DeployError';
  constructor(
    readonly status: 400 | 402 | 403 | 404 | 409 | 502 | 503,
    message: string,
    readonly code: string,
  ) {
    super(message);
  }
}
