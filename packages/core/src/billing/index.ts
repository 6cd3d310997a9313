/** `@service/core/billing`: ledger postings (crediting a wallet: grants, top-ups, seeds). */
export { type LedgerPosting, type LedgerResult, post } from './ledger.js';
