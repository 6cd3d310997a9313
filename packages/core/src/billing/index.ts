export { balanceMicros, type LedgerPosting, type LedgerResult, microsToUsd, post } from './ledger.js';
