/**
 * `@service/core/connections`: creating a tenant's connection to a provider outside HTTP (seeds,
 * scripts), and setting a connector's OAuth client the same way.
 */
export { ConnectionError } from './errors.js';
export { type OAuthClientInput, OAuthClients, type OAuthClientView } from './oauth-clients.js';
export { ConnectorOAuthError } from './oauth-errors.js';
export { type CreateConnectionInput, createConnection } from './service.js';
