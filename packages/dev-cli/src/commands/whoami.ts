import { callPlatform, messageOf } from '../api.js';
import { parseCommandArgs } from '../args.js';
import { CliError } from '../cli-error.js';
import { requireConfig } from '../config.js';
import { type CliIo, styles } from '../io.js';

interface Whoami {
  tenant: { id: string; name: string };
  user: { email: string | null; name: string | null } | null;
  app: { id: string; slug: string; name: string } | null;
  key: { kind: string; prefix: string; created_at: string };
}

/**
 * `service whoami`: account, tenant and credit balance of the stored key (`GET /api/cli/whoami`
 * and `GET /api/cli/balance`). Exits 1 when not logged in or when the key is refused.
 */
export async function run(args: string[], io: CliIo): Promise<number> {
  const { values } = parseCommandArgs(args, { json: { type: 'boolean' } });
  const config = await requireConfig(io);
  const [who, balance] = await Promise.all([
    callPlatform<Whoami>(config, 'GET', '/api/cli/whoami'),
    callPlatform<{ balance_usd: number }>(config, 'GET', '/api/cli/balance'),
  ]);
  for (const answer of [who, balance]) {
    if (answer.status !== 200)
      throw new CliError(`The platform answered ${answer.status}: ${messageOf(answer)}`);
  }
  const account = who.body.user?.email ?? config.issuedToEmail ?? null;
  if (values.json) {
    io.stdout.write(
      `${JSON.stringify({
        email: account,
        tenantId: who.body.tenant.id,
        tenantName: who.body.tenant.name,
        balanceUsd: balance.body.balance_usd,
        apiBase: config.apiBase,
        keyPrefix: who.body.key.prefix,
      })}\n`,
    );
    return 0;
  }
  const style = styles(io);
  const usd = balance.body.balance_usd;
  const amount = `USD ${usd.toFixed(2)}`;
  const rows: Array<[string, string]> = [
    ['Account', account ?? '(an app key)'],
    ['Tenant', `${who.body.tenant.name} (${who.body.tenant.id})`],
    ['Balance', usd > 0 ? style.green(amount) : style.red(amount)],
    ['Platform', config.apiBase],
    ['Key', `${who.body.key.prefix}… (${who.body.key.kind})`],
  ];
  for (const [label, value] of rows) io.stdout.write(`${style.bold(label.padEnd(9))}${value}\n`);
  return 0;
}
