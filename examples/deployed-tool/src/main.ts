import { createClient } from '@service/sdk';
import { startDeployedTool } from './tool.js';

/**
 * Runs the example tool: `SERVICE_API_KEY` (an App Key, e.g. `keys.appKey` of .service/demo.json)
 * and `SERVICE_BASE_URL` come from the environment, as the platform injects them.
 */
const port = Number(process.env.PORT ?? 8790);
const tool = await startDeployedTool(createClient(), port);
console.log(
  `Deployed tool on ${tool.url}: balance ${tool.state.balanceMicros} micros, ${tool.state.connections.length} connections`,
);
const stop = async () => {
  await tool.close();
  process.exit(0);
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
