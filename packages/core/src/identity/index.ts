/** `@service/core/identity`: accounts, and the constant-time comparison hosts use for their own secrets. */
export { type Account, ensureAccount, type IdentityClaims } from './accounts.js';
export { safeEqual } from './keys.js';
export { TenantStatuses } from './tenant-status.js';
