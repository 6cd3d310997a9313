/**
 * Wire shapes shared by the server and its clients: zod schemas with no Node-only imports, so the
 * SDK (Node, browsers, edge runtimes) validates responses with the very schemas the server uses.
 */
export * from './balance.js';
export * from './connections.js';
export * from './errors.js';
export * from './events.js';
export * from './manifest.js';
export * from './ssh.js';
