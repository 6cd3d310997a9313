export { BalanceReader, type BalanceReaderOptions } from './balances.js';
export {
  applyPosting,
  applyPostings,
  balanceMicros,
  type LedgerPosting,
  type LedgerResult,
  microsToUsd,
  parseWalletNotice,
  post,
  WALLETS_CHANNEL,
} from './ledger.js';
export {
  type AdmitRequest,
  type AdmitResult,
  createMeteringEngine,
  type MeteringEngine,
  type MeteringEngineOptions,
  type Settlement,
  type SettleResult,
} from './metering.js';
export {
  costMicros,
  costOfCall,
  DEFAULT_MARGIN_PERCENT,
  divideHalfEven,
  holdForCall,
  type MeterRate,
  type PriceList,
  parseDecimal,
  priceWithMarginUsd,
  type Quantities,
  rateFor,
} from './pricing.js';
export { BillingReports } from './reports.js';
export {
  DEFAULT_WARN_PCTS,
  listSpendCaps,
  type SpendCapInput,
  type SpendCapView,
  setSpendCap,
} from './spend-caps.js';
export {
  burnRate,
  deploymentUsage,
  integrationUsage,
  tenantUsage,
  USAGE_RANGES,
  type UsageRange,
} from './usage-report.js';
export {
  dayStart,
  isoWeekStart,
  monthStart,
  noticesFor,
  SPEND_PERIODS,
  type SpendWindow,
  spendWindow,
} from './windows.js';
