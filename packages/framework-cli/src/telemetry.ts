/**
 * Anonymous usage telemetry: which command ran, its exit code and duration, the CLI and Node
 * versions. Never arguments, paths, URLs or anything from the host app. Sent only when
 * `SERVICE_TELEMETRY_URL` names an endpoint and nothing opts out; a failed send is ignored.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type CliIo, serviceHome } from './io.js';
import { VERSION } from './version.js';

const SEND_TIMEOUT_MS = 1500;

const truthy = (value: string | undefined) =>
  value !== undefined && value !== '' && value !== '0' && value.toLowerCase() !== 'false';

/** Why telemetry is off, or null when it is on. */
export function telemetryOptOut(io: CliIo): string | null {
  const env = io.env;
  if (env.SERVICE_TELEMETRY_DISABLED === '1') return 'SERVICE_TELEMETRY_DISABLED=1';
  if (truthy(env.DO_NOT_TRACK)) return 'DO_NOT_TRACK';
  if (truthy(env.CI)) return 'CI';
  if (env.NODE_ENV === 'production') return 'production runtime';
  try {
    const settings = JSON.parse(readFileSync(join(serviceHome(io), 'telemetry.json'), 'utf8'));
    if (settings?.optedOut === true) return '~/.service/telemetry.json';
  } catch {
    // No settings file (or an unreadable one): no opt-out there.
  }
  if (!env.SERVICE_TELEMETRY_URL) return 'no endpoint';
  return null;
}

export interface CommandEvent {
  command: string;
  exitCode: number;
  durationMs: number;
}

export async function reportCommand(io: CliIo, event: CommandEvent): Promise<void> {
  if (telemetryOptOut(io) !== null) return;
  try {
    await fetch(io.env.SERVICE_TELEMETRY_URL!, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...event, cli: VERSION, node: process.version, platform: process.platform }),
      signal: AbortSignal.timeout(SEND_TIMEOUT_MS),
    });
  } catch {
    // Telemetry never fails a command.
  }
}
