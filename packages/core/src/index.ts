export * from './billing/index.js';
export * from './http/index.js';
export * from './identity/index.js';
export * from './platform/index.js';
export * from './store/index.js';
