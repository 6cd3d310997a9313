/**
 * The agent's refusals to start or continue a run. Each carries a code the wire maps to its own
 * error code (and status) in one place, so the agent knows nothing of HTTP.
 */

export type RunErrorCode =
  | 'run_in_flight'
  | 'stopping'
  | 'regenerate_not_last'
  | 'not_found'
  /** A user message whose id is already an assistant message's in the thread. */
  | 'message_id_taken';

/** A refusal whose message is safe, and meant, to reach the caller. */
export class RunError extends Error {
  override name = 'RunError';
  constructor(
    readonly code: RunErrorCode,
    message: string,
    /** The run the refusal is about (the one in flight), for the caller to resume or stop. */
    readonly runId?: string,
  ) {
    super(message);
  }
}
