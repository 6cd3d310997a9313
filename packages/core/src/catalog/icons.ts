import { createHash } from 'node:crypto';
import { escapeHtml } from '../http/html.js';

/**
 * The platform's generated icons: a monogram badge (the first letters of a name on a colour
 * drawn from the slug), so every integration logo and tool icon the API hands out resolves
 * without anyone uploading an image. Served as `image/svg+xml` with a policy that runs nothing.
 *
 * @see docs/api/integrations.md "Logos and docs pages"
 */

/** What a generated icon answers with: no script, no outside loads, no sniffing, a day of caching. */
export const ICON_HEADERS = {
  'content-type': 'image/svg+xml; charset=utf-8',
  'x-content-type-options': 'nosniff',
  'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'",
  'cache-control': 'public, max-age=86400',
} as const;

/** Slugs of integrations and tools: lower-case letters, digits and dashes. */
export const CATALOG_SLUG = /^[a-z0-9][a-z0-9-]{0,63}$/;

export const integrationLogoUrl = (baseUrl: string, slug: string) =>
  `${baseUrl}/static/integrations/${slug}.svg`;
export const integrationDocsUrl = (baseUrl: string, slug: string) => `${baseUrl}/docs/integrations/${slug}`;
export const toolIconUrl = (baseUrl: string, slug: string) => `${baseUrl}/static/tools/${slug}.svg`;

/** What an integration row names of its own links (empty when it leaves them to the platform). */
interface IntegrationLinks {
  provider: string;
  logo_url: string;
  docs_url: string;
}

/**
 * The logo every API answer gives for an integration: the one its row names, else the platform's
 * generated one, so it is never empty and always resolves.
 */
export const integrationLogoOf = (baseUrl: string, row: Pick<IntegrationLinks, 'provider' | 'logo_url'>) =>
  row.logo_url || integrationLogoUrl(baseUrl, row.provider);

/** The docs page every API answer gives for an integration, on the same rule as its logo. */
export const integrationDocsOf = (baseUrl: string, row: Pick<IntegrationLinks, 'provider' | 'docs_url'>) =>
  row.docs_url || integrationDocsUrl(baseUrl, row.provider);

const PALETTE = ['#2563eb', '#7c3aed', '#db2777', '#dc2626', '#d97706', '#059669', '#0891b2', '#4b5563'];

/** Up to two letters: the initials of the first two words, or the first two letters of one word. */
export function monogram(name: string): string {
  const words = name.match(/[\p{L}\p{N}]+/gu) ?? [];
  const letters =
    words.length >= 2
      ? `${[...words[0]!][0]}${[...words[1]!][0]}`
      : [...(words[0] ?? '?')].slice(0, 2).join('');
  return letters.toUpperCase();
}

/** A 64x64 rounded badge with `name`'s monogram, its colour fixed by `slug`. */
export function monogramSvg(slug: string, name: string): string {
  const colour = PALETTE[createHash('sha256').update(slug).digest()[0]! % PALETTE.length]!;
  const label = escapeHtml(name);
  return `<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64" viewBox="0 0 64 64" role="img" aria-label="${label}">
<title>${label}</title>
<rect width="64" height="64" rx="14" fill="${colour}"/>
<text x="32" y="41" text-anchor="middle" font-family="system-ui, sans-serif" font-size="24" font-weight="600" fill="#ffffff">${escapeHtml(monogram(name))}</text>
</svg>
`;
}
