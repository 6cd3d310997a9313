import { CliError } from './cli-error.js';

/** The cloud key: `svc_` followed by 40 hex characters. */
const CLOUD_KEY = /^svc_[0-9a-f]{40}$/i;

/** Refuses a malformed cloud key before any network call, without printing it. */
export function checkCloudKey(command: string, key: string): void {
  if (!CLOUD_KEY.test(key))
    throw new CliError(`${command}: the cloud key is svc_ followed by 40 hex characters.`);
}
