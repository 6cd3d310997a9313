/** Deployments: the `Deployer` interface a scheduler implements, and the local supervised-process deployer. */
export {
  type Deployer,
  DeployerError,
  type DeploymentSpec,
  type DeploymentState,
  type DeploymentStatus,
  type LogLine,
} from './deployer.js';
export { LocalDeployer, type LocalDeployerOptions } from './local-deployer.js';
