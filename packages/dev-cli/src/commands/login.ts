import { parseCommandArgs } from '../args.js';
import { DEFAULT_API_BASE, parseApiBase, readConfig, writeConfig } from '../config.js';
import { type CliIo, styles } from '../io.js';
import { describeSpan, listenForLogin } from '../loopback.js';

/** The spec's login timer. */
export const LOGIN_TIMEOUT_MS = 5 * 60_000;

/**
 * `service login`: a loopback listener, the bootstrap page in the browser, the key written to
 * the config. No code verifier or exchange: the page posts the key straight to the listener.
 */
export async function run(args: string[], io: CliIo): Promise<number> {
  const { values } = parseCommandArgs(args, {
    'api-base': { type: 'string' },
    'no-browser': { type: 'boolean' },
  });
  const stored = await readConfig(io).catch(() => null);
  const apiBase = values['api-base']
    ? parseApiBase(values['api-base'])
    : (stored?.apiBase ?? DEFAULT_API_BASE);
  const style = styles(io);

  const listener = await listenForLogin({
    apiOrigin: new URL(apiBase).origin,
    timeoutMs: io.loginTimeoutMs ?? LOGIN_TIMEOUT_MS,
    ...(io.stdin.isTTY ? { pasteFrom: io.stdin } : {}),
    onBadPaste: () => io.stderr.write('That is not a login code. Paste the code the browser page shows.\n'),
  });
  try {
    const url = `${apiBase}/dev/cli-bootstrap?${new URLSearchParams({ cb: listener.callbackUrl, mode: 'personal-key' })}`;
    const opened = values['no-browser'] ? false : await io.openUrl(url);
    io.stdout.write(
      `${opened ? 'Opened your browser. If it did not open, visit' : 'Open this URL in your browser to log in'}:\n\n  ${url}\n\n`,
    );
    io.stdout.write(
      `Waiting for the browser (at most ${describeSpan(io.loginTimeoutMs ?? LOGIN_TIMEOUT_MS)})${io.stdin.isTTY ? '; or paste the login code the page shows' : ''}...\n`,
    );
    const payload = await listener.payload;
    const path = await writeConfig(io, {
      apiBase,
      apiKey: payload.apiKey,
      tenantId: payload.tenantId,
      appId: payload.appId,
      issuedToEmail: payload.email,
      issuedAt: payload.issuedAt,
    });
    io.stdout.write(
      `${style.green('Logged in')} as ${style.bold(payload.email ?? 'your account')} (tenant ${payload.tenantId}).\nKey stored in ${path}.\n`,
    );
    return 0;
  } finally {
    await listener.close();
  }
}
