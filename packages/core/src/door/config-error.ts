/** A door composition that cannot start; the message says what to fix. */
export class DoorConfigError extends Error {
  override name = 'DoorConfigError';

  constructor(
    message: string,
    /** Doctor code where one exists (E-MCP-009: no canonical URL). */
    readonly code = 'ERR_SERVICE_DOOR_CONFIG',
  ) {
    super(message);
  }
}
