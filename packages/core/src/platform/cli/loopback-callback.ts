/**
 * The loopback URL `service login` listens on, as the bootstrap page accepts it: exactly
 * `http://127.0.0.1:<port>/done` or `http://localhost:<port>/done`. Nothing else (no other host,
 * path, query, fragment, userinfo or scheme), so the page can never be made to post a fresh key
 * anywhere but a listener on the user's own machine.
 */
export interface LoopbackCallback {
  /** The URL as given (already in its only accepted spelling). */
  url: string;
  /** `http://127.0.0.1:<port>`: what the page's CSP lets it connect to. */
  origin: string;
  port: number;
}

const CALLBACK_PATTERN = /^http:\/\/(127\.0\.0\.1|localhost):([1-9][0-9]{0,4})\/done$/;

export function parseLoopbackCallback(value: unknown): LoopbackCallback | null {
  if (typeof value !== 'string') return null;
  const match = CALLBACK_PATTERN.exec(value);
  if (!match) return null;
  const port = Number(match[2]);
  if (port > 65_535) return null;
  return { url: value, origin: `http://${match[1]}:${port}`, port };
}
