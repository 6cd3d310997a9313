export { BalanceReader, type BalanceReaderOptions } from './balances.js';
export { balanceMicros, type LedgerPosting, type LedgerResult, microsToUsd, post } from './ledger.js';
