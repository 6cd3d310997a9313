export { ConfigError, type PlatformEnvConfig, readPlatformEnv } from './config.js';
export { DEFAULT_RATE_LIMITS, type PlatformContext, type PlatformRateLimits } from './context.js';
export { createPlatform, type Platform, type PlatformOptions } from './create-platform.js';
export { type ErrorShape, PlatformError, type PlatformErrorOptions } from './errors.js';
