/**
 * Where to send the browser after sign-in: a same-origin path starting with exactly one `/`, as
 * a URL parser writes it (dot segments resolved). Anything else (absolute URLs, `//host`,
 * backslashes that browsers treat as slashes, control characters that browsers strip from URLs,
 * a path whose dot segments resolve to `//host`) becomes `/`, so the form cannot be an open
 * redirect.
 */
export function safeReturnTo(value: unknown): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > 2048) return '/';
  if (!value.startsWith('/') || value.startsWith('//') || value.includes('\\')) return '/';
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what we refuse
  if (/[\u0000-\u001f\u007f]/.test(value)) return '/';
  const probe = 'http://return-to.invalid';
  try {
    const url = new URL(value, probe);
    if (url.origin !== probe || url.pathname.startsWith('//')) return '/';
    return `${url.pathname}${url.search}${url.hash}`;
  } catch {
    return '/';
  }
}
