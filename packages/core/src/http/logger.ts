/**
 * Structured logs: one JSON object per line. Callers pass facts, never secrets: no header
 * values, tokens, keys or request bodies are ever handed to a logger.
 */
export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

export function createJsonLogger(
  write: (line: string) => void = (line) => process.stdout.write(line),
): Logger {
  const emit =
    (level: string) =>
    (message: string, fields: Record<string, unknown> = {}) => {
      write(`${JSON.stringify({ time: new Date().toISOString(), level, msg: message, ...fields })}\n`);
    };
  return { info: emit('info'), warn: emit('warn'), error: emit('error') };
}

export const silentLogger: Logger = { info() {}, warn() {}, error() {} };

/** The loggable parts of an error: name, message, code and cause chain, never a secret payload. */
export function describeError(error: unknown): Record<string, unknown> {
  if (!(error instanceof Error)) return { error: String(error) };
  const code = (error as { code?: unknown }).code;
  return {
    error: error.name,
    error_message: error.message,
    ...(code !== undefined ? { error_code: code } : {}),
    ...(error.stack ? { stack: error.stack } : {}),
    ...(error.cause ? { cause: describeError(error.cause) } : {}),
  };
}
