/**
 * Kysely types of the wire's tables (migration 0003-wire). Merged into the store's `Database`.
 *
 * @see docs/storage.md
 */
import type { ColumnType, Generated } from 'kysely';
import type { CreatedAt, Json, NullableJson, NullableTimestamp, Timestamp, Touched } from './columns.js';

export type RunStatus = 'running' | 'awaiting_approval' | 'completed' | 'failed' | 'cancelled';
export type ApprovalStatus = 'pending' | 'approved' | 'executed' | 'declined' | 'expired' | 'dropped';

export interface WireThreadsTable {
  owner: string;
  id: string;
  title: string | null;
  created_at: CreatedAt;
  updated_at: Touched;
}

export interface WireMessagesTable {
  owner: string;
  thread_id: string;
  seq: number;
  id: string;
  role: 'user' | 'assistant' | 'system';
  /** The whole AI SDK UI message, as the client renders it. */
  message: Json<unknown>;
  created_at: CreatedAt;
}

export interface WireRunsTable {
  id: string;
  owner: string;
  thread_id: string;
  status: RunStatus;
  stop_requested_at: NullableTimestamp;
  /** `user` (an explicit stop), `abandoned` (nobody resumed in time), `thread_deleted`, `shutdown`. */
  stop_reason: string | null;
  error_code: string | null;
  error_message: string | null;
  /** Last time a client on another instance was reading the run's stream. */
  watched_at: Touched;
  created_at: CreatedAt;
  updated_at: Touched;
  ended_at: NullableTimestamp;
  /** The automation that started the run (null for a chat turn). */
  automation_id: ColumnType<string | null, string | null | undefined, string | null>;
  /** The person the run answers to: the automation's owner, or who asked for a rerun. */
  actor: ColumnType<string | null, string | null | undefined, string | null>;
  trigger: ColumnType<RunTrigger, RunTrigger | undefined, RunTrigger>;
}

/** What started a run: a chat message, a schedule, a webhook delivery, or a rerun. */
export type RunTrigger = 'chat' | 'schedule' | 'webhook' | 'rerun';

export interface WireAutomationsTable {
  id: string;
  owner: string;
  /** The owner's principal as the host resolved it when the automation was saved. */
  principal: Json<Record<string, unknown>>;
  name: string;
  prompt: string;
  status: 'active' | 'paused';
  trigger_type: 'schedule' | 'webhook';
  cron: string | null;
  timezone: string | null;
  source: string | null;
  /** The next occurrence of a schedule; null when paused or webhook-triggered. */
  next_run_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  last_run_at: NullableTimestamp;
  created_at: CreatedAt;
  updated_at: Touched;
}

export interface WireRunChunksTable {
  run_id: string;
  seq: number;
  chunk: Json<unknown>;
}

export interface WireApprovalsTable {
  id: string;
  owner: string;
  run_id: string;
  thread_id: string;
  tool_call_id: string;
  tool: string;
  input: Json<unknown>;
  status: ApprovalStatus;
  remember: NullableJson<{ scope: 'tool' | 'input'; ttlSeconds: number }>;
  grant_id: string | null;
  created_at: CreatedAt;
  decided_at: NullableTimestamp;
  expires_at: Timestamp;
}

export interface WireGrantsTable {
  id: string;
  owner: string;
  tool: string;
  scope: 'tool' | 'input';
  input_hash: string | null;
  approval_id: string | null;
  created_at: CreatedAt;
  expires_at: Timestamp;
  revoked_at: NullableTimestamp;
}

export interface WireAuditEventsTable {
  id: Generated<number>;
  owner: string | null;
  kind: string;
  data: ColumnType<Record<string, unknown>, string | undefined, string>;
  created_at: CreatedAt;
}

export interface WireWebhookDeliveriesTable {
  source: string;
  delivery_id: string;
  received_at: CreatedAt;
}

/** An uploaded file (migration 0019-files); its bytes are the blob `blob_key`. */
export interface WireFilesTable {
  owner: string;
  id: string;
  name: string;
  media_type: string;
  size: number;
  blob_key: string;
  created_at: CreatedAt;
}

/** One chunk of a blob kept in the store: chunks `0..n` in order make its bytes. */
export interface WireBlobChunksTable {
  blob_key: string;
  seq: number;
  data: Uint8Array;
}

/** An anonymous wire session (migration 0020); `adopted_by` is the user it moved to, once. */
export interface WireAnonymousSessionsTable {
  owner: string;
  created_at: CreatedAt;
  adopted_by: string | null;
  adopted_at: NullableTimestamp;
}

/** The organization workspace a user switched to (migration 0020). */
export interface WireOrgSelectionsTable {
  owner: string;
  org_id: string;
  updated_at: Touched;
}

/** A text channel address bound to an owner's thread (migration 0020). */
export interface WireChannelBindingsTable {
  id: string;
  owner: string;
  channel: string;
  address: string;
  thread_id: string;
  created_at: CreatedAt;
}

export interface WireTables {
  wire_threads: WireThreadsTable;
  wire_messages: WireMessagesTable;
  wire_runs: WireRunsTable;
  wire_run_chunks: WireRunChunksTable;
  wire_approvals: WireApprovalsTable;
  wire_grants: WireGrantsTable;
  wire_audit_events: WireAuditEventsTable;
  wire_webhook_deliveries: WireWebhookDeliveriesTable;
  wire_automations: WireAutomationsTable;
  wire_files: WireFilesTable;
  wire_blob_chunks: WireBlobChunksTable;
  wire_anonymous_sessions: WireAnonymousSessionsTable;
  wire_org_selections: WireOrgSelectionsTable;
  wire_channel_bindings: WireChannelBindingsTable;
}
