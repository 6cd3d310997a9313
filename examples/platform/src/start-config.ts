/**
 * The process's own settings (docs/configuration.md), read from the environment before anything
 * starts. A module of its own so the checks can be tested without starting a process.
 */
import { ConfigError } from '@service/core/platform';

/** This process's own settings, read before anything starts (docs/configuration.md). */
export interface StartConfig {
  port: number;
  hostname: string;
  graceMs: number;
  /** SERVICE_DEMO_HOST_PORT; unset: PORT + 1, or any free port when that is taken. */
  demoHostPort: number | undefined;
  baseUrl: string;
}

export function readStartConfig(vars: NodeJS.ProcessEnv = process.env): StartConfig {
  const port = integerOf(vars, 'PORT', 65535) ?? 8787;
  return {
    port,
    hostname: env('HOST', vars) ?? '127.0.0.1',
    graceMs: integerOf(vars, 'SERVICE_SHUTDOWN_GRACE_MS', 600_000) ?? 10_000,
    demoHostPort: integerOf(vars, 'SERVICE_DEMO_HOST_PORT', 65535),
    // Validated by the platform, which names it.
    baseUrl: env('SERVICE_BASE_URL', vars) ?? `http://localhost:${port}`,
  };
}

/** A variable's value; blank counts as unset, as everywhere else in the configuration. */
export function env(name: string, vars: NodeJS.ProcessEnv = process.env): string | undefined {
  return vars[name]?.trim() || undefined;
}

/** An integer variable from 0 to `max`, or undefined when unset. */
function integerOf(vars: NodeJS.ProcessEnv, name: string, max: number): number | undefined {
  const value = env(name, vars);
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number(value) > max) {
    throw new ConfigError(
      `Invalid configuration: ${name} must be an integer from 0 to ${max}, got "${value}"`,
    );
  }
  return Number(value);
}
