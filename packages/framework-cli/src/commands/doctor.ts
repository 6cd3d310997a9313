/**
 * `service doctor [dir]`: the wiring on disk, then one live round trip to the running app
 * (`SERVICE_URL`, default http://localhost:3000): `/status`, the two doctor probes and, when the
 * door is open, its discovery documents checked against each other and against `server.json`
 * and the registry's HTTP challenge. Exit 0 when nothing failed (warnings allowed), 1 otherwise.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from '../args.js';
import type { CliIo } from '../io.js';
import {
  addCommand,
  appAbove,
  appDir,
  appUrl,
  CATALOG_PATH,
  CONFIG_PATH,
  ENCRYPTION_KEY_VARIABLE,
  GENERATE_KEY_COMMAND,
  installedPackage,
  isEncryptionKey,
  isObject,
  keepsExternals,
  NEXT_EXTERNAL_PACKAGES,
  nextConfigFile,
  nextExternalsSetting,
  nextMajor,
  readConfig,
  readDotEnv,
  readPackageJson,
  type ServiceConfig,
  safeJson,
  WIRE_PATH,
} from '../project.js';
import { CHALLENGE_PATH, onDomain, SERVER_JSON_SCHEMA_VERSION } from '../registry.js';
import { AI_RANGE, notWiring } from '../templates.js';

type Level = 'ok' | 'warn' | 'fail';
interface Finding {
  level: Level;
  text: string;
}

// A development server may compile the route on its first request.
const PROBE_TIMEOUT_MS = 30_000;

export async function run(args: string[], io: CliIo): Promise<number> {
  const { positionals } = parseArgs('doctor', args, {}, 1);
  const dir = appDir(io.cwd, positionals[0]);
  // Run in a subfolder, the config check names the app folder; its .env is the one the app reads.
  const envDir = existsSync(join(dir, CONFIG_PATH)) ? dir : (appAbove(dir) ?? dir);
  const findings: Finding[] = [];
  const add = (level: Level, text: string) => findings.push({ level, text });

  let config: ServiceConfig | null = null;
  try {
    config = readConfig(dir);
    add('ok', `.service/config.json: ${config.framework === 'next' ? 'a Next.js' : 'an Express'} app`);
  } catch (error) {
    add('fail', (error as Error).message);
  }
  if (config) {
    for (const file of config.wiring) {
      const problem = existsSync(join(dir, file))
        ? notWiring(file, readFileSync(join(dir, file), 'utf8'))
        : undefined;
      if (problem === undefined) add('fail', `wiring: ${file} is missing (\`service init\` creates it)`);
      else if (problem) add('fail', `wiring: ${file} does not compose the service: ${problem}`);
      else add('ok', `wiring: ${file}`);
    }
  }
  const key = { ...readDotEnv(envDir), ...io.env }[ENCRYPTION_KEY_VARIABLE];
  if (key === undefined)
    add('fail', `${ENCRYPTION_KEY_VARIABLE} is not set (\`service init\` provisions it in .env)`);
  else if (!isEncryptionKey(key))
    add(
      'fail',
      `${ENCRYPTION_KEY_VARIABLE} is not base64 of 32 bytes (several may be comma-separated): make one with \`${GENERATE_KEY_COMMAND}\``,
    );
  else add('ok', `${ENCRYPTION_KEY_VARIABLE} is set`);
  const base = appUrl(envDir, io.env);
  // The running app knows its own environment (a process manager or the deploy may set
  // SERVICE_BASE_URL there, not in .env): when it answers, its answer decides.
  if (
    config &&
    doorWithoutCanonicalUrl(dir, envDir, config, io.env) &&
    (await liveBaseUrlSet(base)) !== true
  ) {
    add(
      'fail',
      'E-MCP-009: the composition opens the MCP door but sets neither SERVICE_BASE_URL nor mcp.baseUrl',
    );
  }
  checkAiVersion(dir, add);
  if (config?.framework === 'next') checkNextExternals(dir, add);
  if (existsSync(join(dir, CATALOG_PATH))) add('ok', `${CATALOG_PATH} is there`);
  else add('warn', `${CATALOG_PATH} is missing: run \`service sync\``);

  await checkLive(base, dir, config?.framework, add);

  const failed = findings.filter((f) => f.level === 'fail').length;
  const warned = findings.filter((f) => f.level === 'warn').length;
  const exitCode = failed === 0 ? 0 : 1;
  if (io.json) {
    io.stdout.write(`${JSON.stringify({ ok: exitCode === 0, exitCode, url: base, checks: findings })}\n`);
    return exitCode;
  }
  const mark: Record<Level, string> = { ok: '✓', warn: '!', fail: '✗' };
  for (const finding of findings) io.stdout.write(`${mark[finding.level]} ${finding.text}\n`);
  io.stdout.write(
    failed === 0
      ? `service doctor: green${warned ? ` (${warned} warning${warned === 1 ? '' : 's'})` : ''}\n`
      : `service doctor: ${failed} problem${failed === 1 ? '' : 's'}\n`,
  );
  return exitCode;
}

/**
 * The door needs its canonical URL (the composition refuses to start without one): read from the
 * wiring and the environment doctor sees, since an app that cannot compose has no live answer to
 * give. The caller asks the running app before reporting it.
 */
function doorWithoutCanonicalUrl(
  dir: string,
  envDir: string,
  config: ServiceConfig,
  env: Record<string, string | undefined>,
): boolean {
  const source = config.wiring
    .map((file) => {
      try {
        return readFileSync(join(dir, file), 'utf8');
      } catch {
        return '';
      }
    })
    .join('\n')
    // What is commented out configures nothing: block comments, and line comments (a `//` after
    // a colon or a quote is a URL's, not a comment).
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
  if (!/\bmcp\s*:/.test(source)) return false;
  const fromEnv = env.SERVICE_BASE_URL ?? readDotEnv(envDir).SERVICE_BASE_URL;
  return !fromEnv?.trim() && !/\bbaseUrl\s*:/.test(source);
}

/** Whether the running app has its base URL (`GET /doctor/base-url`); null when it does not answer. */
async function liveBaseUrlSet(base: string): Promise<boolean | null> {
  const answer = await get(`${base}${WIRE_PATH}/doctor/base-url`).catch(() => null);
  const set = (answer?.body as { set?: unknown } | undefined)?.set;
  return answer?.status === 200 && typeof set === 'boolean' ? set : null;
}

/**
 * The app's `ai` against the range core depends on: on another major every turn fails
 * (`Unsupported model version`) while `/status` still says the agent is ready.
 */
function checkAiVersion(dir: string, add: (level: Level, text: string) => void): void {
  const core = installedPackage(dir, '@service/core');
  const needs = (field: string) => (core?.[field] as Record<string, unknown> | undefined)?.ai;
  const range = String(needs('dependencies') ?? needs('peerDependencies') ?? AI_RANGE);
  const wanted = /^\^?(\d+)(?:\.(\d+)\.(\d+))?$/.exec(range.trim());
  if (!wanted) return;
  const fix = `run \`${addCommand(dir, `ai@^${wanted[1]}`)}\``;
  const ai = installedPackage(dir, 'ai');
  if (!ai) {
    add('warn', `ai is not installed in the app; @service/core needs ai ${range}: ${fix}`);
    return;
  }
  const version = String(ai.version);
  const [major, minor, patch] = (/^(\d+)\.(\d+)\.(\d+)/.exec(version) ?? []).slice(1).map(Number);
  const [needMajor, needMinor, needPatch] = wanted.slice(1).map((n) => Number(n ?? 0));
  // A caret range: the same major, and not below the version it names.
  const below = minor! < needMinor! || (minor === needMinor && patch! < needPatch!);
  if (major === needMajor && !below) add('ok', `ai ${version} (@service/core needs ai ${range})`);
  else add('fail', `ai ${version} is installed; @service/core needs ai ${range}: ${fix}`);
}

/** On Next.js below 16 (webpack), the packages that must stay outside the server bundle. */
function checkNextExternals(dir: string, add: (level: Level, text: string) => void): void {
  const major = nextMajor(dir, readPackageJson(dir));
  if (major === null || major >= 16) return;
  const file = nextConfigFile(dir);
  if (file && keepsExternals(readFileSync(join(dir, file), 'utf8'))) {
    add('ok', `${file} keeps ${NEXT_EXTERNAL_PACKAGES.join(' and ')} outside the webpack bundle`);
    return;
  }
  add(
    'fail',
    `Next.js ${major} bundles the store with webpack, which breaks it (every wire request answers 503): add \`${nextExternalsSetting(major)}\` to ${file ?? 'next.config.mjs'}`,
  );
}

async function get(
  url: string,
  init: RequestInit = {},
): Promise<{ status: number; body: unknown; text: string }> {
  const response = await fetch(url, {
    ...init,
    signal: AbortSignal.timeout(PROBE_TIMEOUT_MS),
    redirect: 'manual',
  });
  const text = await response.text();
  return { status: response.status, body: safeJson(text), text };
}

const post = (url: string) =>
  get(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });

/** Why `/status` may have failed, read from the wire's error code when the wire answered. */
function statusHint({ status, body }: { status: number; body: unknown }): string {
  const code = (body as { error?: { code?: unknown } } | undefined)?.error?.code;
  if (status === 401) return ' (not in development mode?)';
  if (code === 'principal_required')
    return ' (principal_required: outside development mode /status is for signed-in users; run doctor against the app in development)';
  if (typeof code === 'string') return ` (${code})`;
  // No wire error: whatever answered is not the service's wire.
  return ' (no service wire there: is SERVICE_URL the app, not another server?)';
}

async function checkLive(
  base: string,
  dir: string,
  framework: ServiceConfig['framework'] | undefined,
  add: (level: Level, text: string) => void,
): Promise<void> {
  let status: { status: number; body: unknown };
  try {
    status = await get(`${base}${WIRE_PATH}/status`);
  } catch (error) {
    add(
      'fail',
      `${base}${WIRE_PATH}/status: no answer (${(error as Error).message}); is the app running? (SERVICE_URL)`,
    );
    return;
  }
  const blocks = (status.body as { blocks?: Record<string, unknown> } | undefined)?.blocks;
  if (status.status !== 200 || !blocks) {
    add('fail', `${base}${WIRE_PATH}/status answered ${status.status}${statusHint(status)}`);
    return;
  }
  add('ok', `${base}${WIRE_PATH}/status: the wire answers`);

  const present = await post(`${base}${WIRE_PATH}/doctor/present`).catch(() => null);
  const presentBody = present?.body as Record<string, unknown> | undefined;
  if (present?.status === 404) add('warn', 'doctor probes answer 404: the app is not in development mode');
  else if (
    present?.status === 200 &&
    ['authorization', 'cookie', 'forwarding'].every((k) => typeof presentBody?.[k] === 'boolean')
  ) {
    add(
      presentBody?.forwarding ? 'ok' : 'warn',
      presentBody?.forwarding
        ? 'present mode: the user’s credentials reach the host’s API'
        : 'present mode: SERVICE_BASE_URL is unset, so tools get no user credentials',
    );
  } else add('fail', `POST ${WIRE_PATH}/doctor/present answered ${present?.status ?? 'nothing'}`);

  const actAs = await post(`${base}${WIRE_PATH}/doctor/act-as`).catch(() => null);
  const configured = (actAs?.body as { configured?: unknown } | undefined)?.configured;
  if (actAs?.status === 200 && typeof configured === 'boolean') {
    add(
      configured ? 'ok' : 'warn',
      configured ? 'actAs is configured' : 'actAs is not configured: door tool calls answer not-implemented',
    );
  } else if (actAs?.status !== 404)
    add('fail', `POST ${WIRE_PATH}/doctor/act-as answered ${actAs?.status ?? 'nothing'}`);

  if (!blocks.mcp) {
    add('ok', 'the MCP door is closed (mcp unset)');
    return;
  }
  await checkDoor(base, dir, framework, add);
}

/** serve-static skips dot-folders such as `.well-known/` unless told otherwise. */
const EXPRESS_STATIC_HINT =
  " (on Express, serve that folder with `app.use(express.static('public', { dotfiles: 'allow' }))`: express.static ignores `.well-known/` without it)";

async function checkDoor(
  base: string,
  dir: string,
  framework: ServiceConfig['framework'] | undefined,
  add: (level: Level, text: string) => void,
): Promise<void> {
  const origin = new URL(base).origin;
  const basePath = new URL(base).pathname.replace(/\/$/, '');
  const mcpPath = `${basePath}${WIRE_PATH}/mcp`;
  const fetchDoc = async (path: string) => {
    const answer = await get(`${origin}${path}`).catch(() => null);
    if (answer?.status !== 200 || typeof answer.body !== 'object' || answer.body === null) {
      add('fail', `${path} answered ${answer?.status ?? 'nothing'}`);
      return null;
    }
    return answer.body as Record<string, unknown>;
  };
  const resource = await fetchDoc(`/.well-known/oauth-protected-resource${mcpPath}`);
  const server = await fetchDoc(`/.well-known/oauth-authorization-server${mcpPath}`);
  const card = await fetchDoc('/.well-known/mcp/server-card.json');
  if (!resource || !server || !card) return;

  const mcpUrl = resource.resource;
  const problems: string[] = [];
  if (typeof mcpUrl !== 'string' || !mcpUrl.endsWith(`${WIRE_PATH}/mcp`))
    problems.push('resource is not the door’s MCP URL');
  const issuers = resource.authorization_servers;
  if (!Array.isArray(issuers) || issuers.length === 0) problems.push('authorization_servers is empty');
  else if (issuers[0] !== server.issuer) problems.push('authorization_servers does not name the issuer');
  const methods = server.code_challenge_methods_supported;
  if (!Array.isArray(methods) || methods.length !== 1 || methods[0] !== 'S256') {
    problems.push('code_challenge_methods_supported is not exactly S256');
  }
  for (const field of [
    'authorization_endpoint',
    'token_endpoint',
    'registration_endpoint',
    'revocation_endpoint',
  ]) {
    if (typeof server[field] !== 'string') problems.push(`${field} is missing`);
  }
  const endpoint = (card.transport as { endpoint?: unknown } | undefined)?.endpoint;
  if (endpoint !== mcpUrl) problems.push('the server card’s endpoint is not the MCP URL');
  if (problems.length > 0) add('fail', `door discovery: ${problems.join('; ')}`);
  else add('ok', `door discovery: both OAuth documents and the server card agree on ${mcpUrl}`);

  const serverJsonFile = join(dir, 'server.json');
  if (!existsSync(serverJsonFile)) {
    add('ok', 'no server.json (not published to the MCP registry)');
    return;
  }
  const mismatch = serverJsonMismatch(safeJson(readFileSync(serverJsonFile, 'utf8')), mcpUrl);
  if (typeof mismatch === 'string') add('ok', `server.json agrees with the live door (${mismatch})`);
  else add('fail', `server.json: ${mismatch.join('; ')}`);

  const challenge = await get(`${origin}${CHALLENGE_PATH}`).catch(() => null);
  if (challenge?.status === 200) {
    if (challenge.text.trim().startsWith('v=MCPv1'))
      add('ok', `${CHALLENGE_PATH} serves the registry challenge`);
    else add('fail', `${CHALLENGE_PATH} does not start with v=MCPv1`);
  } else {
    add(
      'warn',
      `${CHALLENGE_PATH} answered ${challenge?.status ?? 'nothing'}: prove the domain by DNS, or serve the file from \`service mcp verify-domain --write-well-known\`${framework === 'express' ? EXPRESS_STATIC_HINT : ''}`,
    );
  }
}

/**
 * What in `server.json` disagrees with the live door, or the registry name when nothing does. The
 * file is the developer's: each field is checked for its type before it is read, so a malformed
 * one is a failed check, not a crash.
 */
function serverJsonMismatch(document: unknown, mcpUrl: unknown): string[] | string {
  if (!isObject(document)) return ['not a JSON object (regenerate it: `service mcp server-json --force`)'];
  const mismatch: string[] = [];
  const { $schema, name, remotes } = document;
  if (typeof $schema !== 'string' || !$schema.includes(SERVER_JSON_SCHEMA_VERSION))
    mismatch.push(`$schema is not ${SERVER_JSON_SCHEMA_VERSION}`);
  const first: unknown = Array.isArray(remotes) ? remotes[0] : undefined;
  const remote = isObject(first) ? first.url : undefined;
  let remoteHost: string | null = null;
  if (typeof remote !== 'string') mismatch.push('remotes[0].url is missing');
  else {
    try {
      remoteHost = new URL(remote).hostname;
    } catch {
      mismatch.push(`remotes[0].url ${remote} is not a URL`);
    }
    if (remote !== mcpUrl) mismatch.push(`remotes[0].url ${remote} is not the door’s ${String(mcpUrl)}`);
  }
  if (typeof name !== 'string' || !name.includes('/'))
    mismatch.push('name is not a registry name (reverse-DNS/name)');
  else {
    const reversed = name.split('/')[0]!.split('.').reverse().join('.');
    if (remoteHost && !onDomain(remoteHost, reversed))
      mismatch.push(`the remote URL is not on ${reversed}, the domain of the name ${name}`);
  }
  return mismatch.length > 0 ? mismatch : (name as string);
}
