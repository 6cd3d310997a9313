/**
 * `service validate [file]` on valid and invalid manifests: exit codes and messages.
 *
 * @see docs/cli.md "validate"
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { run } from '../src/index.js';
import { createTestIo, type TestIo } from './support/io.js';

let io: TestIo;
afterEach(async () => io?.dispose());

const VALID = `name: weather-tool
version: 1
runtime: node
integrations: [llm-gateway, github]
restart_on: [connection.changed, connection.status_changed]
env:
  required: [WEATHER_API_URL]
  optional: [LOG_LEVEL, MAX_RETRIES_2]
health:
  path: /status
  port: 8080
`;

async function validate(source: string | null, args: string[] = [], file = 'service.yaml') {
  io = await createTestIo();
  if (source !== null) await writeFile(join(io.cwd, file), source);
  const code = await run(['validate', ...args], io);
  return { code, out: io.out(), err: io.err() };
}

describe('service validate', () => {
  it('accepts a valid manifest with exit 0', async () => {
    const { code, out } = await validate(VALID);
    expect(code).toBe(0);
    expect(out).toBe('✓ service.yaml is valid (weather-tool, runtime node).\n');
  });

  it('accepts the smallest manifest: name, version and runtime', async () => {
    expect((await validate('name: abc\nversion: 1\nruntime: other\n')).code).toBe(0);
  });

  it('lists every problem with its path and position, and exits 1', async () => {
    const { code, out } = await validate(`name: Weather_Tool
version: 2
runtime: cobol
integrations: [llm-gateway, llm-gateway]
restart_on: [connection_updated]
env:
  required: [API_URL, lowercase]
  optional: [API_URL]
health:
  port: 70000
  path: status
colour: blue
`);
    expect(code).toBe(1);
    expect(out).toMatchInlineSnapshot(`
      "✗ service.yaml: 10 problems
        service.yaml:1:7  name: must match ^[a-z][a-z0-9-]{1,62}[a-z0-9]$ (3-64 lowercase letters, digits, hyphens)
        service.yaml:2:10  version: must be 1
        service.yaml:3:10  runtime: must be one of python, node, go, rust, ruby, java, other
        service.yaml:4:15  integrations: lists an integration twice
        service.yaml:5:14  restart_on[0]: must be an event kind: connection.connected, connection.disconnected, connection.changed, connection.status_changed, billing.usage_recorded, billing.balance_changed, billing.cap_warned, billing.cap_tripped
        service.yaml:7:23  env.required[1]: must be upper snake case (^[A-Z][A-Z0-9_]*$)
        service.yaml:8:14  env.optional[0]: API_URL is also required
        service.yaml:10:9  health.port: must be 1-65535
        service.yaml:11:9  health.path: must start with /
        service.yaml:12:1  colour: unknown key
      "
    `);
  });

  it('names missing required keys', async () => {
    const { code, out } = await validate('integrations: []\n');
    expect(code).toBe(1);
    expect(out).toContain('name: is required');
    expect(out).toContain('version: is required');
    expect(out).toContain('runtime: is required');
  });

  it('refuses unknown keys at any depth', async () => {
    const { out } = await validate(
      `${VALID}env_extra: 1\n`.replace('  port: 8080', '  port: 8080\n  timeout: 3'),
    );
    expect(out).toMatch(/service\.yaml:\d+:\d+ {2}env_extra: unknown key/);
    expect(out).toMatch(/service\.yaml:12:3 {2}health\.timeout: unknown key/);
  });

  it('shows the control characters of a key instead of sending them to the terminal', async () => {
    const { code, out } = await validate(`${VALID}"\\e]0;pwned\\a\\e[2J": 1\n`);
    expect(code).toBe(1);
    expect(out).toContain('\ufffd]0;pwned\ufffd\ufffd[2J: unknown key');
    expect(out).not.toContain('\u001b');
    expect(out).not.toContain('\u0007');
  });

  it('reports YAML syntax errors with their position', async () => {
    const { code, out } = await validate('name: [unclosed\nversion: 1\n');
    expect(code).toBe(1);
    expect(out).toMatch(/service\.yaml:\d+:\d+ {2}YAML: /);
  });

  it('says a list or a mapping is expected where a single value is given', async () => {
    const { code, out } = await validate(
      'name: weather-tool\nversion: 1\nruntime: node\nintegrations: llm-gateway\nenv:\n  required: API_URL\nhealth: /healthz\n',
    );
    expect(code).toBe(1);
    expect(out).toContain('service.yaml:4:15  integrations: must be a list, such as [A, B]');
    expect(out).toContain('service.yaml:6:13  env.required: must be a list, such as [A, B]');
    expect(out).toContain('service.yaml:7:9  health: must be a mapping of keys to values');
  });

  it('refuses a document that is not a mapping', async () => {
    const { code, out } = await validate('- just\n- a list\n');
    expect(code).toBe(1);
    expect(out).toContain('must be a mapping of keys to values');
  });

  it('validates the file given as argument', async () => {
    io = await createTestIo();
    await writeFile(join(io.cwd, 'other.yaml'), VALID);
    expect(await run(['validate', 'other.yaml'], io)).toBe(0);
    expect(io.out()).toContain('other.yaml is valid');
  });

  it('exits 1 with a clear message when the file does not exist', async () => {
    const { code, err } = await validate(null);
    expect(code).toBe(1);
    expect(err).toBe('No such file: service.yaml\n');
  });

  it('names a folder given for the file as a folder, by the name it was given', async () => {
    const outside = await validate(null, ['/tmp']);
    expect(outside.code).toBe(1);
    expect(outside.err).toBe(
      '/tmp is a folder: name the manifest file in it (service validate /tmp/service.yaml)\n',
    );
  });

  it('refuses an empty path as a usage error (exit 2), saying it is empty', async () => {
    const { code, err } = await validate(null, ['']);
    expect(code).toBe(2);
    expect(err).toMatch(/^The manifest path is empty: service validate \[file\]\n/);
  });

  it('prints one JSON object with --json', async () => {
    const bad = await validate('name: x\nversion: 1\nruntime: node\n', ['--json']);
    expect(bad.code).toBe(1);
    expect(JSON.parse(bad.out)).toEqual({
      file: 'service.yaml',
      valid: false,
      errors: [{ path: 'name', message: expect.stringContaining('must match'), line: 1, column: 7 }],
    });
    const good = await validate(VALID, ['--json']);
    expect(good.code).toBe(0);
    expect(JSON.parse(good.out)).toEqual({ file: 'service.yaml', valid: true, errors: [] });
  });

  it('prints JSON with --json for a missing file too', async () => {
    const { code, out, err } = await validate(null, ['--json']);
    expect(code).toBe(1);
    expect(err).toBe('');
    expect(JSON.parse(out)).toEqual({
      file: 'service.yaml',
      valid: false,
      errors: [{ path: '', message: 'No such file: service.yaml', line: null, column: null }],
    });
    const folder = await validate(null, ['--json', '/tmp']);
    expect(JSON.parse(folder.out).errors).toEqual([
      { path: '', message: expect.stringMatching(/^\/tmp is a folder/), line: null, column: null },
    ]);
  });

  it('gives every --json error a line and column, null for a missing key', async () => {
    const { code, out } = await validate('name: weather-tool\nversion: 1\n', ['--json']);
    expect(code).toBe(1);
    expect(JSON.parse(out).errors).toEqual([
      { path: 'runtime', message: 'is required', line: null, column: null },
    ]);
  });

  it('accepts the catalog keys: display data, optional integrations and a wizard', async () => {
    const { code, out } = await validate(`name: research-desk
version: 1
runtime: node
title: Research desk
description: Answers questions with sources.
category: research
integrations: [llm-gateway]
optional_integrations: [web-search]
wizard:
  inputs:
    - { key: DESK_NAME, label: Desk name, type: text, required: true }
    - { key: MAX_SOURCES, label: Sources per answer, type: number }
  steps:
    - id: connect
      title: Connect your services
      sections:
        - { type: integration, providers: [llm-gateway, web-search] }
    - id: configure
      title: Configure the desk
      sections:
        - { type: inputs, keys: [DESK_NAME, MAX_SOURCES] }
`);
    expect(out).toBe('✓ service.yaml is valid (research-desk, runtime node).\n');
    expect(code).toBe(0);
  });

  it('cross-checks the wizard against the integrations and inputs it names', async () => {
    const { code, out } = await validate(`name: research-desk
version: 1
runtime: node
integrations: [llm-gateway]
optional_integrations: [llm-gateway]
wizard:
  inputs:
    - { key: DESK_NAME, label: Desk name, type: text }
    - { key: DESK_NAME, label: Again, type: text }
  steps:
    - id: connect
      title: Connect
      sections:
        - { type: integration, providers: [web-search] }
    - id: connect
      title: Configure
      sections:
        - { type: inputs, keys: [MISSING] }
`);
    expect(code).toBe(1);
    expect(out).toMatchInlineSnapshot(`
      "✗ service.yaml: 5 problems
        service.yaml:5:25  optional_integrations[0]: llm-gateway is also required
        service.yaml:9:14  wizard.inputs[1].key: DESK_NAME is listed twice
        service.yaml:14:44  wizard.steps[0].sections[0].providers[0]: web-search is not in integrations or optional_integrations
        service.yaml:15:11  wizard.steps[1].id: connect is used twice
        service.yaml:18:34  wizard.steps[1].sections[0].keys[0]: MISSING is not in wizard.inputs
      "
    `);
  });

  it('lists the cross-checks too when another part of the manifest is malformed', async () => {
    const { code, out } = await validate(`name: research-desk
version: 1
runtime: node
colour: blue
integrations: [llm-gateway]
wizard:
  inputs:
    - { key: DESK_NAME, label: Desk name, type: text }
    - { key: DESK_NAME, label: Again, type: text }
  steps:
    - id: connect
      title: Connect
      sections:
        - { type: bogus }
        - { type: integration, providers: [web-search] }
    - id: connect
      title: Configure
      sections:
        - { type: inputs, keys: [DESK_NAME] }
`);
    expect(code).toBe(1);
    expect(out).toMatchInlineSnapshot(`
      "✗ service.yaml: 5 problems
        service.yaml:4:1  colour: unknown key
        service.yaml:9:14  wizard.inputs[1].key: DESK_NAME is listed twice
        service.yaml:14:19  wizard.steps[0].sections[0].type: must have type integration (with providers) or inputs (with keys)
        service.yaml:15:44  wizard.steps[0].sections[1].providers[0]: web-search is not in integrations or optional_integrations
        service.yaml:16:11  wizard.steps[1].id: connect is used twice
      "
    `);
  });

  it('checks the wizard keys themselves before cross-checking', async () => {
    const { code, out } = await validate(`name: research-desk
version: 1
runtime: node
wizard:
  inputs:
    - { key: desk, label: Desk name, type: colour }
  steps:
    - id: Connect
      title: Connect
      sections:
        - { type: video }
  extra: 1
`);
    expect(code).toBe(1);
    expect(out).toMatchInlineSnapshot(`
      "✗ service.yaml: 5 problems
        service.yaml:6:14  wizard.inputs[0].key: must be upper snake case (^[A-Z][A-Z0-9_]*$)
        service.yaml:6:44  wizard.inputs[0].type: must be one of text, secret, number, boolean, url
        service.yaml:8:11  wizard.steps[0].id: must be lowercase letters, digits and hyphens
        service.yaml:11:19  wizard.steps[0].sections[0].type: must have type integration (with providers) or inputs (with keys)
        service.yaml:12:3  wizard.extra: unknown key
      "
    `);
  });
});
