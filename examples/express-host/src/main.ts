/** Runs the demo host on its own (`pnpm --filter @service/example-express-host start`). */
import { startExpressHost } from './host.js';

const port = Number(process.env.PORT ?? '3000');
const host = await startExpressHost({ port });
process.stdout.write(
  `Express host at ${host.url}\nSign in: curl -s ${host.url}/login -H 'content-type: application/json' -d '{"email":"you@example.com"}'\n`,
);
const stop = async () => {
  await host.close();
  process.exit(0);
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
