/** Tables of platform operators: the audit trail of their actions on tenants. */
import type { Generated } from 'kysely';
import type { CreatedAt } from './columns.js';

export type OperatorActionKind = 'grant' | 'suspend' | 'resume';

export interface OperatorActionsTable {
  id: Generated<number>;
  tenant_id: string;
  action: OperatorActionKind;
  /** Who acted: the admin's email, or `cli:<os user>` for the `pnpm admin` script. */
  operator: string;
  reason: string | null;
  /** A grant's amount; null for the other actions. */
  amount_micros: number | null;
  ledger_entry_id: number | null;
  created_at: CreatedAt;
}

export interface OperatorTables {
  operator_actions: OperatorActionsTable;
}
