/**
 * Reads an environment variable where there is one (Node, Bun, Deno's `process` shim, edge
 * runtimes that polyfill `process.env`), without importing anything Node-only: in a browser
 * there is no `process` and every variable reads as unset.
 */
export function readEnv(name: string): string | undefined {
  const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env;
  const value = env?.[name]?.trim();
  return value ? value : undefined;
}
