/** `@service/core/billing`: ledger postings (crediting a wallet: grants, top-ups, seeds). */
export { type LedgerPosting, type LedgerResult, post } from './ledger.js';
export {
  type GrantResult,
  MAX_GRANT_MICROS,
  type OperatorAction,
  OperatorError,
  Operators,
  type TenantOverview,
} from './operators.js';
