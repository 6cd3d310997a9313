export {
  createTenantFixture,
  type RunningPlatform,
  startPlatform,
  type TenantFixture,
} from '../../../core/test/support/platform.js';
export { openTestStore, type TestStore } from '../../../core/test/support/stores.js';
