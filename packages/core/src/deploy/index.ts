/** Deployments: the `Deployer` interface, the local supervised-process deployer, and the deploy domain. */
export {
  type Deployer,
  DeployerError,
  type DeploymentSpec,
  type DeploymentState,
  type DeploymentStatus,
  type LogLine,
} from './deployer.js';
export { type AppView, type DeployInput, Deployments, type DeployResult } from './deployments.js';
export { DeployError } from './errors.js';
export { LocalDeployer, type LocalDeployerOptions } from './local-deployer.js';
