/**
 * The MCP registry's rules for a remote server: the name is the reverse-DNS of the domain plus
 * `/` plus the final segment of the package name, remote URLs live on that domain or a subdomain,
 * and `server.json` is pinned to one schema version. Shared by `mcp server-json` and doctor.
 */
export const SERVER_JSON_SCHEMA_VERSION = '2025-12-11';
export const SERVER_JSON_SCHEMA = `https://static.modelcontextprotocol.io/schemas/${SERVER_JSON_SCHEMA_VERSION}/server.schema.json`;
export const CHALLENGE_PATH = '/.well-known/mcp-registry-auth';

const DOMAIN = /^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z][a-z0-9-]{0,62}$/;

/** Lowercased, or null when it is not a DNS name (no scheme, port, path or IP address). */
export function normalizeDomain(value: string): string | null {
  const domain = value.trim().toLowerCase().replace(/\.$/, '');
  return DOMAIN.test(domain) ? domain : null;
}

export function registryName(domain: string, packageName: string): string {
  const reversed = domain.split('.').reverse().join('.');
  const segment = packageName
    .split('/')
    .pop()!
    .replace(/[^A-Za-z0-9._-]/g, '-');
  return `${reversed}/${segment}`;
}

export function onDomain(host: string, domain: string): boolean {
  const h = host.toLowerCase();
  return h === domain || h.endsWith(`.${domain}`);
}

/** The DNS TXT / HTTP challenge value of an Ed25519 public key. */
export function challengeValue(publicKey: Buffer): string {
  return `v=MCPv1; k=ed25519; p=${publicKey.toString('base64')}`;
}

export interface ServerJson {
  $schema: string;
  name: string;
  description: string;
  version: string;
  remotes: Array<{ type: 'streamable-http'; url: string }>;
  title?: string;
  websiteUrl?: string;
}
