import { z } from 'zod';
import { type OAuthClientInput, oauthClientInputSchema } from '../connections/oauth-clients.js';
import { describeIssues } from '../http/issues.js';
import { ConfigError } from './config.js';

const PROVIDER = /^[a-z0-9][a-z0-9_-]{0,62}$/;

/**
 * `SERVICE_OAUTH_CLIENTS`: connectors' OAuth clients from the environment, a JSON object from
 * provider slug to the body an admin would `PUT` (see docs/api/oauth.md). A malformed value stops
 * the boot, naming the variable and the field but never a value.
 */
export function oauthClientsFromEnv(value: string | undefined): Map<string, OAuthClientInput> {
  if (value === undefined || value.trim() === '') return new Map();
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw new ConfigError('Invalid configuration: SERVICE_OAUTH_CLIENTS must be a JSON object');
  }
  const result = z
    .record(z.string().regex(PROVIDER, 'must be a provider slug'), oauthClientInputSchema)
    .safeParse(parsed);
  if (!result.success) {
    throw new ConfigError(
      `Invalid configuration: SERVICE_OAUTH_CLIENTS: ${describeIssues(result.error, { limit: 1 })}`,
    );
  }
  return new Map(Object.entries(result.data));
}
