/** `@service/core/platform`: the tenant HTTP API as one fetch handler. */
export { ConfigError } from './config.js';
export type { PlatformRateLimits } from './context.js';
export {
  createPlatform,
  type Platform,
  type PlatformCloseOptions,
  type PlatformOptions,
} from './create-platform.js';
export type { Mailer, MailMessage } from './mailer.js';
