import { z } from 'zod';
import { bodyOf, callPlatform, messageOf, notThePlatform } from '../api.js';
import { parseCommandArgs } from '../args.js';
import { CliError } from '../cli-error.js';
import { displayKey, requireConfig } from '../config.js';
import { type CliIo, printable, styles } from '../io.js';

const whoamiSchema = z.object({
  tenant: z.object({ id: z.string(), name: z.string() }),
  user: z.object({ email: z.string().nullable(), name: z.string().nullable() }).nullable(),
  key: z.object({ kind: z.string(), prefix: z.string() }),
});
const balanceSchema = z.object({ balance_usd: z.number() });

/**
 * `service whoami`: account, tenant and credit balance of the stored key (`GET /api/cli/whoami`
 * and `GET /api/cli/balance`). Exits 1 when not logged in or when the key is refused.
 */
export async function run(args: string[], io: CliIo): Promise<number> {
  parseCommandArgs(args, {});
  const config = await requireConfig(io);
  const paths = ['/api/cli/whoami', '/api/cli/balance'] as const;
  const answers = await Promise.all(paths.map((path) => callPlatform(config, 'GET', path)));
  for (const [i, answer] of answers.entries()) {
    // The platform has both routes: a 404 is some other server at apiBase.
    if (answer.status === 404) throw notThePlatform(config, paths[i]!);
    if (answer.status !== 200)
      throw new CliError(`The platform answered ${answer.status}: ${messageOf(answer)}`);
  }
  const who = bodyOf(answers[0]!, whoamiSchema, config, paths[0]);
  const balance = bodyOf(answers[1]!, balanceSchema, config, paths[1]);
  const account = who.user?.email ?? config.issuedToEmail ?? null;
  if (io.json) {
    io.stdout.write(
      `${JSON.stringify({
        email: account,
        tenantId: who.tenant.id,
        tenantName: who.tenant.name,
        balanceUsd: balance.balance_usd,
        apiBase: config.apiBase,
        key: displayKey(config.apiKey),
        keyKind: who.key.kind,
      })}\n`,
    );
    return 0;
  }
  const style = styles(io);
  const usd = balance.balance_usd;
  const amount = `USD ${usd.toFixed(2)}`;
  const rows: Array<[string, string]> = [
    ['Account', account === null ? '(an app key)' : printable(account)],
    ['Tenant', printable(`${who.tenant.name} (${who.tenant.id})`)],
    ['Balance', usd > 0 ? style.green(amount) : style.red(amount)],
    ['Platform', config.apiBase],
    ['Key', printable(`${displayKey(config.apiKey)} (${who.key.kind})`)],
  ];
  for (const [label, value] of rows) io.stdout.write(`${style.bold(label.padEnd(9))}${value}\n`);
  return 0;
}
