/** Runs the demo host on its own (`pnpm --filter @service/example-express-host start`). */
import { reviewersFrom } from './apps.js';
import { startExpressHost } from './host.js';

const port = Number(process.env.PORT ?? '3000');
const host = await startExpressHost({
  port,
  // Behind a proxy or tunnel, the public URL the MCP door announces.
  ...(process.env.SERVICE_BASE_URL ? { baseUrl: process.env.SERVICE_BASE_URL } : {}),
});
process.stdout.write(
  `Express host at ${host.url}\n` +
    `Chat page: ${host.url}/ (sign in with any email address)\n` +
    `Orders page: ${host.url}/orders (a slot for your apps, components to remix)\n` +
    `Your apps: ${host.url}/apps; review queue: ${host.url}/review (sign in as ${reviewersFrom(process.env).join(', ')})\n` +
    `Sign in: curl -s ${host.url}/login -H 'content-type: application/json' -d '{"email":"you@example.com"}'\n` +
    `MCP door: ${host.mcpUrl} (setup steps at ${host.mcpUrl}/connect)\n`,
);
const stop = async () => {
  await host.close();
  process.exit(0);
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
