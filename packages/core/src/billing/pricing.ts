import type { MeterName, ProviderDialect } from '../store/database.js';

/**
 * Metered cost in exact decimal arithmetic: cost = quantity x unit price x (1 + margin / 100), in
 * micros, rounded half to even once per call. Unit prices are micros per unit with up to 12
 * decimals (a token may cost 0.15 micros); margins are percents with up to 4 decimals.
 *
 * @see docs/billing.md "Cost"
 */
const PRICE_DECIMALS = 12;
const MARGIN_DECIMALS = 4;
const PRICE_SCALE = 10n ** BigInt(PRICE_DECIMALS);
const MARGIN_SCALE = 10n ** BigInt(MARGIN_DECIMALS);
const HUNDRED_PERCENT = 100n * MARGIN_SCALE;

/** The default margin when neither the provider nor `MARGIN_PERCENT` sets one. */
export const DEFAULT_MARGIN_PERCENT = '20';

export interface CostLine {
  /** Whole units (calls, tokens). */
  quantity: number;
  /** Micros per unit, as a decimal string or number. */
  unitPriceMicros: string | number;
}

/**
 * Decimals parsed before: every metered call prices its meters from the same few rates and
 * margins, so each is parsed once (bounded; a price list is a handful of values).
 */
const PARSED_DECIMALS = new Map<string, bigint>();
const PARSED_DECIMALS_LIMIT = 1024;

/** A non-negative decimal as a scaled integer; refuses anything else (no exponents, no signs). */
export function parseDecimal(value: string | number, decimals: number): bigint {
  const key = `${decimals}:${value}`;
  const known = PARSED_DECIMALS.get(key);
  if (known !== undefined) return known;
  const parsed = parseDecimalText(value, decimals);
  if (PARSED_DECIMALS.size >= PARSED_DECIMALS_LIMIT) PARSED_DECIMALS.clear();
  PARSED_DECIMALS.set(key, parsed);
  return parsed;
}

function parseDecimalText(value: string | number, decimals: number): bigint {
  const text = typeof value === 'number' ? numberToPlain(value) : value.trim();
  const match = /^(\d+)(?:\.(\d+))?$/.exec(text);
  if (!match) throw new RangeError(`"${value}" is not a non-negative decimal`);
  const fraction = (match[2] ?? '').replace(/0+$/, '');
  if (fraction.length > decimals) throw new RangeError(`"${value}" has more than ${decimals} decimals`);
  return BigInt(match[1]!) * 10n ** BigInt(decimals) + BigInt(fraction.padEnd(decimals, '0') || '0');
}

/** Integer division rounding half to even (banker's rounding); `denominator` > 0. */
export function divideHalfEven(numerator: bigint, denominator: bigint): bigint {
  const quotient = numerator / denominator;
  const remainder = numerator % denominator;
  const twice = 2n * remainder;
  if (twice > denominator || (twice === denominator && quotient % 2n !== 0n)) return quotient + 1n;
  return quotient;
}

/** Total cost in whole micros of a call's meter lines, margin applied once to the sum. */
export function costMicros(lines: CostLine[], marginPercent: string | number): number {
  let raw = 0n;
  for (const line of lines) {
    if (!Number.isSafeInteger(line.quantity) || line.quantity < 0) {
      throw new RangeError(`quantity ${line.quantity} is not a whole, non-negative number`);
    }
    raw += BigInt(line.quantity) * parseDecimal(line.unitPriceMicros, PRICE_DECIMALS);
  }
  const factor = HUNDRED_PERCENT + parseDecimal(marginPercent, MARGIN_DECIMALS);
  const micros = divideHalfEven(raw * factor, PRICE_SCALE * HUNDRED_PERCENT);
  if (micros > BigInt(Number.MAX_SAFE_INTEGER)) throw new RangeError('cost is beyond the safe range');
  return Number(micros);
}

/** A unit price with the margin applied, in USD per unit, for public price lists. */
export function priceWithMarginUsd(unitPriceMicros: string | number, marginPercent: string | number): number {
  const price = parseDecimal(unitPriceMicros, PRICE_DECIMALS);
  const factor = HUNDRED_PERCENT + parseDecimal(marginPercent, MARGIN_DECIMALS);
  // micros -> USD is another 10^6; keep 12 significant decimals of USD before converting.
  const usdScaled = divideHalfEven(price * factor, HUNDRED_PERCENT * 1_000_000n);
  return Number(usdScaled) / Number(PRICE_SCALE);
}

/** What a call used, per meter (calls, input and output tokens). */
export type Quantities = Partial<Record<MeterName, number>>;

/** The price of one meter: for one model, or for every model without a rate of its own. */
export interface MeterRate {
  meter: MeterName;
  /** '' for every model without a rate of its own. */
  model: string;
  unitPriceMicros: string;
}

/** How a provider's calls are priced. */
export interface PriceList {
  /** `per_call` calls cost a known price; the others are metered by the tokens they report. */
  dialect: ProviderDialect;
  /** What a token-metered call holds until its usage is known. */
  holdMicros: number;
  marginPercent: string;
  rates: MeterRate[];
}

/**
 * The rate of a meter for a model: the model's own, else the provider's any-model rate. At a
 * token-metered provider (`unknownPaysHighest`), a call whose model is not known (`null`: an
 * upload's body streams through unread, or names no model) may run any model the upstream
 * serves, so it pays the highest rate the meter has, published or not, provided the provider
 * prices calls of any model at all: hiding the model never lowers the price. A per-call
 * provider's model is never read, so its calls pay the any-model rate.
 */
export function rateFor(
  rates: MeterRate[],
  meter: MeterName,
  model: string | null,
  unknownPaysHighest = true,
): MeterRate | undefined {
  const anyModel = rates.find((r) => r.meter === meter && r.model === '');
  if (model === null && unknownPaysHighest) {
    if (!anyModel) return undefined;
    let highest = anyModel;
    let highestPrice = parseDecimal(anyModel.unitPriceMicros, PRICE_DECIMALS);
    for (const rate of rates) {
      if (rate.meter !== meter) continue;
      const price = parseDecimal(rate.unitPriceMicros, PRICE_DECIMALS);
      if (price > highestPrice) {
        highest = rate;
        highestPrice = price;
      }
    }
    return highest;
  }
  return (model ? rates.find((r) => r.meter === meter && r.model === model) : undefined) ?? anyModel;
}

/** What a request tells about its cost before it runs. */
export interface CallShape {
  model: string | null;
  /** The request's own bound on its output tokens (`max_tokens` and the like); null: none. */
  maxOutputTokens: number | null;
  /** Size of the request body: the input is estimated at one token per four bytes. */
  inputBytes: number;
}

/** What admission holds for a call, and the most the call can cost. */
export interface CallHold {
  /** The call's expected cost: the credit held while it runs. */
  holdMicros: number;
  /** The most it can cost: its price, its `max_tokens` bound, or (unbounded) its hold. */
  worstMicros: number;
  /** True when `worstMicros` is a real bound (a price, or a request that bounds its output). */
  bounded: boolean;
}

/** Input tokens estimated per byte of request body. */
const BYTES_PER_TOKEN = 4;

/**
 * What to hold for a call before it runs, or null when the call has no price.
 *
 * - A per-call price is held exactly.
 * - A token-metered call's worst case, when the request bounds its output, is its call price plus
 *   its input estimate plus `maxOutputTokens` at the output price. It holds its expected cost:
 *   `typicalMicros` (the model's running average of real cost) when known, else the provider's
 *   `holdMicros` plus the call price; never less than its own call price and input estimate, and
 *   never more than its worst case.
 *
 * @see docs/billing.md "Admission"
 */
export function holdForCall(
  prices: PriceList,
  shape: CallShape,
  typicalMicros: number | null = null,
): CallHold | null {
  const { model } = shape;
  const call = rateFor(prices.rates, 'call', model, prices.dialect !== 'per_call');
  const callLine = call ? [{ quantity: 1, unitPriceMicros: call.unitPriceMicros }] : [];
  if (prices.dialect === 'per_call') {
    if (!call) return null;
    const price = costMicros(callLine, prices.marginPercent);
    return { holdMicros: price, worstMicros: price, bounded: true };
  }
  const input = rateFor(prices.rates, 'input_tokens', model);
  const output = rateFor(prices.rates, 'output_tokens', model);
  if (!input && !output && !call) return null;
  const inputLine = input
    ? [{ quantity: Math.ceil(shape.inputBytes / BYTES_PER_TOKEN), unitPriceMicros: input.unitPriceMicros }]
    : [];
  const floor = costMicros([...callLine, ...inputLine], prices.marginPercent);
  const typical = typicalMicros ?? prices.holdMicros + costMicros(callLine, prices.marginPercent);
  const expected = Math.max(floor, typical);
  const bound = shape.maxOutputTokens;
  if (bound === null) return { holdMicros: expected, worstMicros: expected, bounded: false };
  const outputLine = output ? [{ quantity: bound, unitPriceMicros: output.unitPriceMicros }] : [];
  const worst = costMicros([...callLine, ...inputLine, ...outputLine], prices.marginPercent);
  return { holdMicros: Math.min(expected, worst), worstMicros: worst, bounded: true };
}

/** A call's cost, rounded once, and each meter's cost rounded on its own (for reports). */
export function costOfCall(
  prices: PriceList,
  model: string | null,
  quantities: Quantities,
): { total: number; perMeter: Quantities } {
  const lines: CostLine[] = [];
  const perMeter: Quantities = {};
  for (const [meter, quantity] of Object.entries(quantities) as Array<[MeterName, number]>) {
    const rate = rateFor(prices.rates, meter, model, prices.dialect !== 'per_call');
    if (!rate || quantity <= 0) continue;
    const line = { quantity, unitPriceMicros: rate.unitPriceMicros };
    lines.push(line);
    perMeter[meter] = costMicros([line], prices.marginPercent);
  }
  return { total: costMicros(lines, prices.marginPercent), perMeter };
}

function numberToPlain(value: number): string {
  if (!Number.isFinite(value) || value < 0) throw new RangeError(`${value} is not a non-negative decimal`);
  return value.toFixed(PRICE_DECIMALS);
}
