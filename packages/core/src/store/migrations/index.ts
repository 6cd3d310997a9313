import type { Migration } from 'kysely';
import * as foundation from './0001-foundation.js';
import * as billing from './0002-billing.js';
import * as wire from './0003-wire.js';
import * as door from './0004-door.js';
import * as sshSessions from './0005-ssh-sessions.js';
import * as instances from './0006-instances.js';
import * as doorTokens from './0007-door-tokens.js';
import * as keyRotation from './0008-key-rotation.js';
import * as purchases from './0009-purchases.js';
import * as operators from './0010-operators.js';
import * as workspaces from './0011-workspaces.js';
import * as stripe from './0012-stripe.js';
import * as catalog from './0013-catalog.js';
import * as automations from './0014-automations.js';
import * as deployments from './0017-deployments.js';
import * as connectorOAuth from './0018-connector-oauth.js';
import * as files from './0019-files.js';
import * as wireSessions from './0020-wire-sessions.js';
import * as endUserConnections from './0021-end-user-connections.js';
import * as wireApps from './0022-wire-apps.js';
import * as wireSlotBuilds from './0023-wire-slot-builds.js';
import * as usageLedgerKey from './0024-usage-ledger-key.js';
import * as usageParentKeys from './0025-usage-parent-keys.js';
import * as endUserFlowRevoked from './0026-end-user-flow-revoked.js';
import * as wireApprovalReason from './0027-wire-approval-reason.js';

/** Every migration, in order. Names sort by their numeric prefix; never rename a shipped one. */
export const MIGRATIONS: Record<string, Migration> = {
  '0001-foundation': foundation,
  '0002-billing': billing,
  '0003-wire': wire,
  '0004-door': door,
  '0005-ssh-sessions': sshSessions,
  '0006-instances': instances,
  '0007-door-tokens': doorTokens,
  '0008-key-rotation': keyRotation,
  '0009-purchases': purchases,
  '0010-operators': operators,
  '0011-workspaces': workspaces,
  '0012-stripe': stripe,
  '0013-catalog': catalog,
  '0014-automations': automations,
  '0017-deployments': deployments,
  '0018-connector-oauth': connectorOAuth,
  '0019-files': files,
  '0020-wire-sessions': wireSessions,
  '0021-end-user-connections': endUserConnections,
  '0022-wire-apps': wireApps,
  '0023-wire-slot-builds': wireSlotBuilds,
  '0024-usage-ledger-key': usageLedgerKey,
  '0025-usage-parent-keys': usageParentKeys,
  '0026-end-user-flow-revoked': endUserFlowRevoked,
  '0027-wire-approval-reason': wireApprovalReason,
};
