import { z } from 'zod';

/** The statuses a connection can be in; the event bus drops any other stored status. */
export const CONNECTION_STATUSES = ['connected', 'needs_reauth', 'revoked', 'error'] as const;
export const connectionStatusSchema = z.enum(CONNECTION_STATUSES);
export type ConnectionStatus = z.infer<typeof connectionStatusSchema>;

/** One environment variable a deployed tool sets from a connection. */
export const envVarSchema = z.object({
  name: z.string(),
  /** Where the value comes from: `app_key`, `connection_key`, `proxy_url`, `credential`, ... */
  value_from: z.string(),
  /** The value when it is not a secret the tool already holds (for example the proxy URL); else null. */
  value: z.string().nullable(),
});

export const envBootstrapSchema = z.object({
  vars: z.array(envVarSchema),
  /** When the tool should restart to pick up a change: `on_change` or `none`. */
  restart: z.string(),
});

/**
 * How the tool reaches the provider through this connection: through the metering proxy with its
 * own App Key (managed pool), or with a credential of its own (bring your own key, user OAuth).
 */
export const connectionCredentialSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('proxy'), base_url: z.string() }),
  z.object({ type: z.literal('api_key'), api_key: z.string() }),
  z.object({ type: z.literal('oauth'), access_token: z.string(), expires_at: z.string().nullable() }),
]);
export type ConnectionCredential = z.infer<typeof connectionCredentialSchema>;

/** One row of `GET /api/deployments/me/connections`. @see docs/api/runtime.md */
export const runtimeConnectionSchema = z.object({
  id: z.string(),
  slug: z.string(),
  display_name: z.string(),
  category: z.string(),
  profile: z.string(),
  status: connectionStatusSchema,
  metadata: z.record(z.string(), z.unknown()),
  credential: connectionCredentialSchema.nullable(),
  env_bootstrap: envBootstrapSchema,
  setup_url: z.string().nullable(),
  error_message: z.string().nullable(),
  connected_at: z.string().nullable(),
  logo_url: z.string(),
  docs_url: z.string(),
});
export type RuntimeConnection = z.infer<typeof runtimeConnectionSchema>;

/** `GET /api/deployments/me/connections` 200 body. Revoked connections are not listed. */
export const runtimeConnectionsSchema = z.object({ connections: z.array(runtimeConnectionSchema) });
export type RuntimeConnections = z.infer<typeof runtimeConnectionsSchema>;
