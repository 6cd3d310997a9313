/**
 * `service mcp server-json` writes the MCP registry's `server.json` for the app's door;
 * `service mcp verify-domain` makes the Ed25519 key that proves the domain is the publisher's and
 * prints the proof (a DNS TXT record or an HTTPS challenge file).
 */
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from '../args.js';
import { CliError } from '../cli-error.js';
import type { CliIo } from '../io.js';
import { readPackageJson } from '../project.js';
import {
  CHALLENGE_PATH,
  challengeValue,
  normalizeDomain,
  onDomain,
  registryName,
  SERVER_JSON_SCHEMA,
  type ServerJson,
} from '../registry.js';
import { unwritable, writeFailure } from '../writable.js';

/** The registry's limit on a description. */
const DESCRIPTION_MAX = 100;

export async function run(args: string[], io: CliIo): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === 'server-json') return serverJson(rest, io);
  if (sub === 'verify-domain') return verifyDomain(rest, io);
  throw new CliError(
    sub === undefined || sub === ''
      ? `service mcp: ${sub === '' ? 'the subcommand is empty' : 'name a subcommand'}: server-json or verify-domain.`
      : `service mcp: unknown subcommand ${sub} (server-json or verify-domain).`,
  );
}

function serverJson(args: string[], io: CliIo): number {
  const { options } = parseArgs(
    'mcp server-json',
    args,
    { domain: 'string', url: 'string', force: 'boolean' },
    0,
  );
  let url: URL | null = null;
  if (options.url !== undefined) {
    try {
      url = new URL(options.url as string);
    } catch {
      throw new CliError(`service mcp server-json: --url is not a URL: ${options.url}`);
    }
    if (url.protocol !== 'https:')
      throw new CliError('service mcp server-json: the public MCP URL must be https.');
  }
  const domainInput = (options.domain as string | undefined) ?? url?.hostname;
  if (!domainInput) throw new CliError('service mcp server-json: pass --domain (or --url).');
  const domain = normalizeDomain(domainInput);
  if (!domain) throw new CliError(`service mcp server-json: not a domain name: ${domainInput}`);
  url ??= new URL(`https://${domain}/api/service/mcp`);
  if (!onDomain(url.hostname, domain)) {
    throw new CliError(`service mcp server-json: ${url.href} is not on ${domain} or a subdomain of it.`);
  }
  const pkg = readPackageJson(io.cwd);
  const packageName = typeof pkg?.name === 'string' ? pkg.name : null;
  if (!packageName)
    throw new CliError(
      'service mcp server-json: package.json needs a name (the registry name ends with it).',
    );
  // Each character the registry's names cannot hold becomes `-`: a name of none it can (all
  // non-Latin letters, say) would name every such server alike.
  if (!/[A-Za-z0-9]/.test(packageName.split('/').pop() ?? ''))
    throw new CliError(
      `service mcp server-json: the registry name ends with the package name's last segment in A-Z, 0-9, ".", "_" and "-"; "${packageName}" has none of those letters or digits: give package.json a name that does.`,
    );
  const target = join(io.cwd, 'server.json');
  if (existsSync(target) && !options.force) {
    throw new CliError('service mcp server-json: server.json exists; pass --force to overwrite it.');
  }
  const description =
    typeof pkg?.description === 'string' && pkg.description.trim()
      ? pkg.description.trim()
      : `${packageName} over MCP`;
  const document: ServerJson = {
    $schema: SERVER_JSON_SCHEMA,
    name: registryName(domain, packageName),
    // Cut on code points: a UTF-16 cut may split a surrogate pair, which is no text.
    description: Array.from(description).slice(0, DESCRIPTION_MAX).join(''),
    version: typeof pkg?.version === 'string' ? pkg.version : '0.0.0',
    remotes: [{ type: 'streamable-http', url: url.href.replace(/\/$/, '') }],
  };
  const problem = unwritable(target, { createsFolders: false });
  if (problem) throw new CliError(`service mcp server-json: cannot write ${target}: ${problem}.`);
  try {
    writeFileSync(target, `${JSON.stringify(document, null, 2)}\n`);
  } catch (error) {
    throw new CliError(`service mcp server-json: cannot write ${target}: ${writeFailure(error)}.`);
  }
  io.stdout.write(
    io.json
      ? `${JSON.stringify({ file: target, server: document })}\n`
      : `Wrote server.json for ${document.name} (${document.remotes[0]!.url}).\n`,
  );
  return 0;
}

function verifyDomain(args: string[], io: CliIo): number {
  const { options } = parseArgs(
    'mcp verify-domain',
    args,
    { domain: 'string', 'key-out': 'string', 'write-well-known': 'string' },
    0,
  );
  if (!options.domain) throw new CliError('service mcp verify-domain: --domain is required.');
  if (!options['key-out']) throw new CliError('service mcp verify-domain: --key-out is required.');
  const domain = normalizeDomain(options.domain as string);
  if (!domain) throw new CliError(`service mcp verify-domain: not a domain name: ${options.domain}`);
  const keyOut = resolve(io.cwd, options['key-out'] as string);
  if (existsSync(keyOut))
    throw new CliError(`service mcp verify-domain: ${keyOut} exists; it is never overwritten.`);
  const wellKnownFile = options['write-well-known']
    ? join(resolve(io.cwd, options['write-well-known'] as string), CHALLENGE_PATH)
    : null;
  // Both paths checked before either is written: nothing is left half-done by a path that
  // cannot take its file.
  const cannot = (file: string, reason: string, written = 'nothing was written') =>
    new CliError(`service mcp verify-domain: cannot write ${file}: ${reason}; ${written}.`);
  const keyProblem = unwritable(keyOut, { createsFolders: false });
  if (keyProblem) throw cannot(keyOut, keyProblem);
  const wellKnownProblem = wellKnownFile && unwritable(wellKnownFile, { createsFolders: true });
  if (wellKnownFile && wellKnownProblem) throw cannot(wellKnownFile, wellKnownProblem);

  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const seed = Buffer.from(privateKey.export({ format: 'jwk' }).d!, 'base64url');
  const raw = Buffer.from(publicKey.export({ format: 'jwk' }).x!, 'base64url');
  const challenge = challengeValue(raw);
  try {
    // `wx`: created here or not at all, even if another process made the file meanwhile.
    writeFileSync(keyOut, `${seed.toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
  } catch (error) {
    throw cannot(keyOut, writeFailure(error));
  }
  if (wellKnownFile) {
    let created: string | undefined;
    try {
      created = mkdirSync(join(wellKnownFile, '..'), { recursive: true });
      writeFileSync(wellKnownFile, `${challenge}\n`);
    } catch (error) {
      // The key was made for this challenge only: kept, a re-run would refuse to replace it while
      // its challenge was never shown anywhere. The folders made for the file go with it.
      rmSync(keyOut, { force: true });
      if (created) rmSync(created, { recursive: true, force: true });
      throw cannot(wellKnownFile, writeFailure(error), 'no key was kept');
    }
  }
  if (io.json) {
    const challengeUrl = `https://${domain}${CHALLENGE_PATH}`;
    io.stdout.write(
      `${JSON.stringify({ domain, keyFile: keyOut, challenge, challengeUrl, wellKnownFile })}\n`,
    );
    return 0;
  }
  if (wellKnownFile) io.stdout.write(`Wrote ${wellKnownFile}\n`);
  io.stdout.write(
    `Key (Ed25519 seed, hex) written to ${keyOut}: keep it secret.\n\n` +
      `Prove ${domain} is yours in one of two ways:\n` +
      `  DNS TXT record on ${domain}:\n    ${challenge}\n` +
      `  HTTP challenge at https://${domain}${CHALLENGE_PATH}:\n    ${challenge}\n`,
  );
  return 0;
}
