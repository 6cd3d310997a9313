import type { Kysely } from 'kysely';
import { priceWithMarginUsd } from '../billing/pricing.js';
import { readBodyText } from '../http/body.js';
import type { Database, MeterName } from '../store/database.js';

/**
 * Public prices, with the margin applied and no tenant data: the LLM gateway's live model catalog
 * (kept in memory for an hour), the integrations with public meters (the public allowlist), and
 * one integration's public rate table.
 *
 * @see docs/api/pricing.md
 */

/** How long the gateway's model catalog is served from memory. */
export const MODELS_TTL_MS = 60 * 60_000;
const DEFAULT_TIMEOUT_MS = 10_000;
/** A model listing past this size is refused (a gateway lists a few hundred models in well under it). */
const DEFAULT_MAX_BYTES = 8 * 1024 * 1024;
const TOKENS_PER_MILLION_PLACES = 6;

export interface ModelPrice {
  id: string;
  name: string;
  context_length: number;
  pricing: {
    prompt_per_token: number;
    completion_per_token: number;
    prompt_per_million: number;
    completion_per_million: number;
  };
}

export interface PricingIntegration {
  slug: string;
  name: string;
  category: string;
}

/** One public price: `usd` for every `per` units of `meter` (for `model`, or any model when null). */
export interface PublicRate {
  meter: MeterName;
  model: string | null;
  unit: 'call' | 'token';
  per: number;
  usd: number;
}

export interface PublicRateTable {
  slug: string;
  name: string;
  category: string;
  description: string;
  currency: 'USD';
  rates: PublicRate[];
}

export interface PricingOptions {
  /** The gateway's OpenAI-compatible model listing. Unset: `{upstream}/v1/models` of the LLM gateway's provider. */
  modelsUrl?: string;
  /** What the 502 calls the gateway. Default: the listing's host. */
  gatewayName?: string;
  timeoutMs?: number;
  maxBytes?: number;
  /** Default margin in percent, when the gateway's provider sets none. */
  marginPercent: string;
  fetch?: typeof fetch;
  now?: () => number;
}

/** The gateway's listing could not be had (unreachable, slow, refused, malformed). */
export class ModelCatalogError extends Error {
  override name = 'ModelCatalogError';
  constructor(readonly gateway: string) {
    super(`Failed to fetch models from ${gateway}`);
  }
}

interface Gateway {
  url: string;
  name: string;
  marginPercent: string;
}

export class PublicPricing {
  #models: { models: ModelPrice[]; expiresAt: number } | null = null;
  #loading: Promise<ModelPrice[]> | null = null;
  /**
   * Counts change notices: a listing fetched across one was priced before the change (the
   * margin it read may be gone), so it answers its callers but is not kept, nor shared after.
   */
  #generation = 0;
  readonly #now: () => number;
  readonly #fetch: typeof fetch;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly options: PricingOptions,
  ) {
    this.#now = options.now ?? Date.now;
    this.#fetch = options.fetch ?? fetch;
  }

  /** Drops the model catalog (a `pricing` change notice arrived). */
  forget(): void {
    this.#models = null;
    this.#loading = null;
    this.#generation++;
  }

  /** The gateway's models with the margin applied; `cached` when served from memory. */
  async models(): Promise<{ models: ModelPrice[]; cached: boolean }> {
    if (this.#models && this.#models.expiresAt > this.#now())
      return { models: this.#models.models, cached: true };
    // Callers arriving while the listing is fetched share the one fetch.
    if (!this.#loading) {
      const loading = this.#loadModels().finally(() => {
        if (this.#loading === loading) this.#loading = null;
      });
      this.#loading = loading;
    }
    const models = await this.#loading;
    return { models, cached: false };
  }

  /** Enabled integrations with at least one public meter on an enabled provider: the public allowlist. */
  async integrations(): Promise<PricingIntegration[]> {
    return this.db
      .selectFrom('integrations as i')
      .innerJoin('providers as p', 'p.slug', 'i.provider')
      .select(['i.provider as slug', 'i.name', 'i.category'])
      .where('i.enabled', '=', true)
      .where('p.enabled', '=', true)
      .where((eb) =>
        eb.exists(
          eb
            .selectFrom('meter_rates as r')
            .select('r.provider')
            .whereRef('r.provider', '=', 'i.provider')
            .where('r.public', '=', true),
        ),
      )
      .orderBy('i.name')
      .orderBy('i.provider')
      .execute();
  }

  /** The public rate table of one entry of the allowlist, or null outside it. */
  async detail(slug: string): Promise<PublicRateTable | null> {
    const row = await this.db
      .selectFrom('integrations as i')
      .innerJoin('providers as p', 'p.slug', 'i.provider')
      .select(['i.provider', 'i.name', 'i.category', 'i.description', 'p.margin_percent'])
      .where('i.provider', '=', slug)
      .where('i.enabled', '=', true)
      .where('p.enabled', '=', true)
      .executeTakeFirst();
    if (!row) return null;
    const rates = await this.db
      .selectFrom('meter_rates')
      .select(['meter', 'model', 'unit_price_micros'])
      .where('provider', '=', slug)
      .where('public', '=', true)
      .orderBy('model')
      .orderBy('meter')
      .execute();
    if (rates.length === 0) return null;
    const margin = row.margin_percent ?? this.options.marginPercent;
    return {
      slug: row.provider,
      name: row.name,
      category: row.category,
      description: row.description,
      currency: 'USD',
      rates: rates.map((rate) => {
        const perCall = rate.meter === 'call';
        return {
          meter: rate.meter,
          model: rate.model === '' ? null : rate.model,
          unit: perCall ? 'call' : 'token',
          per: perCall ? 1 : 1_000_000,
          usd: priceWithMarginUsd(
            perCall
              ? rate.unit_price_micros
              : shiftDecimal(rate.unit_price_micros, TOKENS_PER_MILLION_PLACES),
            margin,
          ),
        };
      }),
    };
  }

  async #loadModels(): Promise<ModelPrice[]> {
    const generation = this.#generation;
    const gateway = await this.#gateway();
    const listing = await this.#fetchListing(gateway);
    const models = listing.flatMap((entry) => {
      const model = priceModel(entry, gateway.marginPercent);
      return model ? [model] : [];
    });
    if (generation === this.#generation) this.#models = { models, expiresAt: this.#now() + MODELS_TTL_MS };
    return models;
  }

  /** Where the listing is and what margin applies: configured, else the LLM gateway integration's provider. */
  async #gateway(): Promise<Gateway> {
    const provider = await this.db
      .selectFrom('integrations as i')
      .innerJoin('providers as p', 'p.slug', 'i.provider')
      .select(['p.upstream_url', 'p.margin_percent'])
      .where('i.kind', '=', 'llm_gateway')
      .where('i.enabled', '=', true)
      .where('p.enabled', '=', true)
      .orderBy('i.provider')
      .executeTakeFirst();
    const url = this.options.modelsUrl ?? (provider ? `${provider.upstream_url}/v1/models` : null);
    if (!url) throw new ModelCatalogError(this.options.gatewayName ?? 'the LLM gateway (none is configured)');
    return {
      url,
      name: this.options.gatewayName ?? new URL(url).host,
      marginPercent: provider?.margin_percent ?? this.options.marginPercent,
    };
  }

  async #fetchListing(gateway: Gateway): Promise<unknown[]> {
    const failed = () => new ModelCatalogError(gateway.name);
    let body: string;
    try {
      const response = await this.#fetch(gateway.url, {
        headers: { accept: 'application/json' },
        redirect: 'error',
        signal: AbortSignal.timeout(this.options.timeoutMs ?? DEFAULT_TIMEOUT_MS),
      });
      if (!response.ok) {
        await response.body?.cancel().catch(() => {});
        throw failed();
      }
      body = await readBodyText(response, { maxBytes: this.options.maxBytes ?? DEFAULT_MAX_BYTES });
    } catch {
      throw failed();
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      throw failed();
    }
    const data = (parsed as { data?: unknown } | null)?.data;
    if (!Array.isArray(data)) throw failed();
    return data;
  }
}

/** One listed model with the margin applied, or null when it carries no usable price. */
function priceModel(entry: unknown, marginPercent: string): ModelPrice | null {
  if (typeof entry !== 'object' || entry === null) return null;
  const { id, name, context_length, pricing } = entry as Record<string, unknown>;
  if (typeof id !== 'string' || id.length === 0 || typeof pricing !== 'object' || pricing === null)
    return null;
  const { prompt, completion } = pricing as Record<string, unknown>;
  const promptUsd = plainDecimal(prompt);
  const completionUsd = plainDecimal(completion);
  if (promptUsd === null || completionUsd === null) return null;
  try {
    // The listing's prices are USD per token; billing's math takes micros: 10^6 per USD.
    const perToken = (usd: string) => priceWithMarginUsd(shiftDecimal(usd, 6), marginPercent);
    const perMillion = (usd: string) => priceWithMarginUsd(shiftDecimal(usd, 12), marginPercent);
    return {
      id,
      name: typeof name === 'string' && name.length > 0 ? name : id,
      context_length:
        Number.isSafeInteger(context_length) && (context_length as number) >= 0
          ? (context_length as number)
          : 0,
      pricing: {
        prompt_per_token: perToken(promptUsd),
        completion_per_token: perToken(completionUsd),
        prompt_per_million: perMillion(promptUsd),
        completion_per_million: perMillion(completionUsd),
      },
    };
  } catch {
    // More precision than billing keeps (past 10^-18 USD a token): not a price anyone is charged.
    return null;
  }
}

/** A non-negative plain decimal as text, or null (negative prices mean "varies" to some gateways). */
function plainDecimal(value: unknown): string | null {
  const text = typeof value === 'string' ? value.trim() : typeof value === 'number' ? String(value) : null;
  return text !== null && /^\d+(\.\d+)?$/.test(text) ? text : null;
}

/** `text` (a plain non-negative decimal) times 10^places, exactly, as a plain decimal. */
export function shiftDecimal(text: string, places: number): string {
  const [whole = '0', fraction = ''] = text.split('.');
  const digits = whole + fraction.padEnd(places, '0');
  const point = whole.length + places;
  const shifted = `${digits.slice(0, point)}.${digits.slice(point)}`.replace(/^0+(?=\d)/, '');
  return shifted.replace(/\.?0*$/, '') || '0';
}
