import type { Kysely } from 'kysely';
import type { PriceList } from '../billing/pricing.js';
import { TtlCache } from '../internal/ttl-cache.js';
import { LAST_KNOWN_MS, readOrLastKnown } from '../store/availability.js';
import { notifyCatalogChanged } from '../store/catalog-changes.js';
import type { Database, MeterName, ProviderDialect } from '../store/database.js';
import type { Sealer } from '../store/sealing.js';

/**
 * The providers behind the metering proxy, read from the store and kept for a few seconds: their
 * upstream, managed-pool credential (opened from its sealed form), free routes, and the price
 * list billing prices their calls by.
 *
 * @see docs/proxy.md "Providers"
 */
export interface FreeRoute {
  /** Upper-case method, or `*` for any. */
  method: string;
  /** The path (under the provider) and everything below it. */
  prefix: string;
}

export interface ProviderConfig extends PriceList {
  slug: string;
  upstreamUrl: string;
  authHeader: string;
  authScheme: string;
  /** The managed-pool credential, or null when the upstream needs none. */
  credential: string | null;
  freeRoutes: FreeRoute[];
}

export interface ProviderInput {
  slug: string;
  upstreamUrl: string;
  dialect: ProviderDialect;
  authHeader?: string;
  authScheme?: string;
  credential?: string | null;
  /** `METHOD /path` rules, e.g. `GET /v1/models`. */
  freeRoutes?: string[];
  holdMicros?: number;
  marginPercent?: string | null;
  rates?: Array<{ meter: MeterName; model?: string; unitPriceMicros: string | number; public?: boolean }>;
}

const CACHE_MS = 5000;

/** The associated data a provider's credential is sealed under. */
export const providerCredentialAad = (slug: string) => `provider:${slug}`;

export function parseFreeRoute(rule: string): FreeRoute {
  const match = /^(\*|[A-Z]+)\s+(\/\S*)$/.exec(rule.trim());
  if (!match) throw new Error(`Free route "${rule}" must look like "GET /v1/models"`);
  return { method: match[1]!, prefix: match[2]!.replace(/\/+$/, '') || '/' };
}

export function isFreeRoute(routes: FreeRoute[], method: string, path: string): boolean {
  return routes.some(
    (route) =>
      (route.method === '*' || route.method === method) &&
      (route.prefix === '/' || path === route.prefix || path.startsWith(`${route.prefix}/`)),
  );
}

/**
 * Creates or replaces a provider and its rates (demo seed, operators, tests). Its margin and rates
 * are public prices: every instance is told `pricing` changed once the write commits.
 */
export async function upsertProvider(
  db: Kysely<Database>,
  sealer: Sealer | null,
  input: ProviderInput,
): Promise<void> {
  if (input.credential && !sealer) {
    throw new Error('Storing a provider credential needs SERVICE_STORE_ENCRYPTION_KEY');
  }
  for (const rule of input.freeRoutes ?? []) parseFreeRoute(rule);
  const row = {
    slug: input.slug,
    upstream_url: input.upstreamUrl.replace(/\/+$/, ''),
    dialect: input.dialect,
    auth_header: (input.authHeader ?? 'authorization').toLowerCase(),
    auth_scheme: input.authScheme ?? 'Bearer',
    credential_ciphertext: input.credential
      ? sealer!.seal(input.credential, providerCredentialAad(input.slug))
      : null,
    free_routes: JSON.stringify(input.freeRoutes ?? []),
    hold_micros: input.holdMicros ?? 10_000,
    margin_percent: input.marginPercent ?? null,
  };
  await db.transaction().execute(async (trx) => {
    await trx
      .insertInto('providers')
      .values(row)
      .onConflict((oc) => oc.column('slug').doUpdateSet(row))
      .execute();
    await trx.deleteFrom('meter_rates').where('provider', '=', input.slug).execute();
    if (input.rates?.length) {
      await trx
        .insertInto('meter_rates')
        .values(
          input.rates.map((rate) => ({
            provider: input.slug,
            meter: rate.meter,
            model: rate.model ?? '',
            unit_price_micros: String(rate.unitPriceMicros),
            public: rate.public ?? false,
          })),
        )
        .execute();
    }
    await notifyCatalogChanged(trx, 'pricing');
  });
}

export class ProviderCatalog {
  readonly #cache: TtlCache<string, ProviderConfig | null>;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly sealer: Sealer | null,
    private readonly defaultMarginPercent: string,
    now: () => number = Date.now,
  ) {
    this.#cache = new TtlCache({ ttlMs: CACHE_MS, maxEntries: 1000, now, staleMs: LAST_KNOWN_MS });
  }

  /** The enabled provider with this slug, or null; while the store cannot be reached, the one last read (see `LAST_KNOWN_MS`). */
  async get(slug: string): Promise<ProviderConfig | null> {
    const cached = this.#cache.get(slug);
    if (cached !== undefined) return cached;
    return readOrLastKnown(
      async () => {
        const config = await this.#load(slug);
        this.#cache.set(slug, config);
        return config;
      },
      () => this.#cache.stale(slug),
    );
  }

  #openCredential(slug: string, sealed: string | null): string | null {
    if (!sealed) return null;
    if (!this.sealer)
      throw new Error(`Provider ${slug} has a sealed credential but no SERVICE_STORE_ENCRYPTION_KEY is set`);
    return this.sealer.open(sealed, providerCredentialAad(slug));
  }

  async #load(slug: string): Promise<ProviderConfig | null> {
    const row = await this.db
      .selectFrom('providers')
      .selectAll()
      .where('slug', '=', slug)
      .where('enabled', '=', true)
      .executeTakeFirst();
    if (!row) return null;
    const rates = await this.db
      .selectFrom('meter_rates')
      .select(['meter', 'model', 'unit_price_micros'])
      .where('provider', '=', slug)
      .execute();
    return {
      slug: row.slug,
      upstreamUrl: row.upstream_url,
      dialect: row.dialect,
      authHeader: row.auth_header,
      authScheme: row.auth_scheme,
      credential: this.#openCredential(row.slug, row.credential_ciphertext),
      freeRoutes: row.free_routes.map(parseFreeRoute),
      holdMicros: row.hold_micros,
      marginPercent: row.margin_percent ?? this.defaultMarginPercent,
      rates: rates.map((r) => ({ meter: r.meter, model: r.model, unitPriceMicros: r.unit_price_micros })),
    };
  }
}
