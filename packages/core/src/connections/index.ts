/** `@service/core/connections`: creating a tenant's connection to a provider outside HTTP (seeds, scripts). */
export { ConnectionError } from './errors.js';
export { type CreateConnectionInput, createConnection } from './service.js';
