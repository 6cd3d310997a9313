/**
 * Grants: an approval remembered for a while, so the same tool (any input, or exactly the
 * approved input) runs without asking again until the grant expires or is revoked.
 */
import type { Kysely, Transaction } from 'kysely';
import { hashSecret } from '../identity/keys.js';
import { canonicalJson } from '../internal/canonical-json.js';
import type { Database } from '../store/database.js';
import { newId } from './ids.js';
import type { Grant, GrantScope } from './tools.js';

/** Longest a remembered approval may last: 30 days. */
export const MAX_GRANT_TTL_SECONDS = 30 * 24 * 60 * 60;
/** `remember: true` lasts a day. */
export const DEFAULT_GRANT_TTL_SECONDS = 24 * 60 * 60;

export function inputHashOf(input: unknown): string {
  return hashSecret(canonicalJson(input));
}

type GrantRow = {
  id: string;
  owner: string;
  tool: string;
  scope: GrantScope;
  input_hash: string | null;
  created_at: Date;
  expires_at: Date;
};

function grantOf(row: GrantRow): Grant {
  return {
    id: row.id,
    subject: row.owner,
    tool: row.tool,
    scope: row.scope,
    inputHash: row.input_hash,
    createdAt: new Date(row.created_at),
    expiresAt: new Date(row.expires_at),
  };
}

export class GrantStore {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly now: () => number = Date.now,
  ) {}

  /** A live grant covering this call, or null. */
  async find(owner: string, tool: string, input: unknown): Promise<Grant | null> {
    const hash = inputHashOf(input);
    const row = await this.db
      .selectFrom('wire_grants')
      .selectAll()
      .where('owner', '=', owner)
      .where('tool', '=', tool)
      .where('revoked_at', 'is', null)
      .where('expires_at', '>', new Date(this.now()))
      .where((eb) => eb.or([eb('scope', '=', 'tool'), eb('input_hash', '=', hash)]))
      .orderBy('expires_at', 'desc')
      .executeTakeFirst();
    return row ? grantOf(row) : null;
  }

  async create(
    trx: Transaction<Database> | Kysely<Database>,
    input: {
      owner: string;
      tool: string;
      scope: GrantScope;
      toolInput: unknown;
      ttlSeconds: number;
      approvalId?: string;
    },
  ): Promise<Grant> {
    const row = await trx
      .insertInto('wire_grants')
      .values({
        id: newId('grt'),
        owner: input.owner,
        tool: input.tool,
        scope: input.scope,
        input_hash: input.scope === 'input' ? inputHashOf(input.toolInput) : null,
        approval_id: input.approvalId ?? null,
        expires_at: new Date(this.now() + input.ttlSeconds * 1000),
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    return grantOf(row);
  }

  /** The owner's live grants, newest first. */
  async list(owner: string): Promise<Grant[]> {
    const rows = await this.db
      .selectFrom('wire_grants')
      .selectAll()
      .where('owner', '=', owner)
      .where('revoked_at', 'is', null)
      .where('expires_at', '>', new Date(this.now()))
      .orderBy('created_at', 'desc')
      .execute();
    return rows.map(grantOf);
  }

  /** Revokes one of the owner's grants; false when there is no such live grant. */
  async revoke(owner: string, id: string): Promise<boolean> {
    const row = await this.db
      .updateTable('wire_grants')
      .set({ revoked_at: new Date(this.now()) })
      .where('owner', '=', owner)
      .where('id', '=', id)
      .where('revoked_at', 'is', null)
      .returning('id')
      .executeTakeFirst();
    return row !== undefined;
  }

  /** Live grants naming each tool, deployment-wide (for `/sync/impact`). */
  async countByTool(tools: string[]): Promise<Map<string, number>> {
    if (tools.length === 0) return new Map();
    const rows = await this.db
      .selectFrom('wire_grants')
      .select(['tool', (eb) => eb.fn.countAll<number>().as('n')])
      .where('tool', 'in', tools)
      .where('revoked_at', 'is', null)
      .where('expires_at', '>', new Date(this.now()))
      .groupBy('tool')
      .execute();
    return new Map(rows.map((row) => [row.tool, Number(row.n)]));
  }
}

/** The JSON shape of a grant on the wire. */
export function grantView(grant: Grant) {
  return {
    id: grant.id,
    tool: grant.tool,
    scope: grant.scope,
    createdAt: grant.createdAt.toISOString(),
    expiresAt: grant.expiresAt.toISOString(),
  };
}
