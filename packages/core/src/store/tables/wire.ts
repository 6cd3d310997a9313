/**
 * Kysely types of the wire's tables (migration 0003-wire and later ones). Merged into the store's `Database`.
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
  /** Why the user denied the call, when they said (shown to the model). */
  reason: ColumnType<string | null, string | null | undefined, string | null>;
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

/** What a wire app is: a screen of its own, a remix of a host component, or a remix a reviewer approves. */
export type WireAppKind = 'app' | 'remix' | 'review';
/** A review app's version, waiting for a reviewer or decided. */
export type WireAppReviewStatus = 'pending' | 'approved' | 'rejected';

/** A person's app (migration 0022-wire-apps). `version` is its current version's number. */
export interface WireAppsTable {
  id: string;
  owner: string;
  name: string;
  kind: WireAppKind;
  /** The host component a remix was forked from, and the hash of the baseline it was forked at. */
  baseline_key: string | null;
  baseline_hash: string | null;
  /** The app this one was forked or imported from. */
  forked_from: string | null;
  version: number;
  /** A review app: the content hash a reviewer approved and the version that serves it. */
  approved_hash: string | null;
  approved_version: number | null;
  created_at: CreatedAt;
  updated_at: Touched;
}

/** One version of an app's document (migration 0022-wire-apps). */
export interface WireAppVersionsTable {
  app_id: string;
  version: number;
  document: Json<Record<string, unknown>>;
  content_hash: string;
  review_status: WireAppReviewStatus | null;
  review_note: string | null;
  reviewed_by: string | null;
  reviewed_at: NullableTimestamp;
  created_at: CreatedAt;
}

/** One wish of an app's edit trail, in order (migration 0022-wire-apps). */
export interface WireAppTrailTable {
  app_id: string;
  seq: number;
  wish: string;
  created_at: CreatedAt;
}

/** A named place on a host page (migration 0022-wire-apps): declared, or reported by the page. */
export interface WireSlotsTable {
  id: string;
  page: string;
  label: string;
  declared: ColumnType<boolean, boolean | undefined, boolean>;
  reported_at: NullableTimestamp;
  created_at: CreatedAt;
}

/** The app a person placed in a slot (migration 0022-wire-apps). */
export interface WirePlacementsTable {
  owner: string;
  slot_id: string;
  app_id: string;
  /** The app the last placement replaced (null: the slot was empty, or held the same app). */
  evicted_app_id: string | null;
  placed_at: Touched;
}

/** A build in flight that targets the owner's slot; deleted when the build ends. */
export interface WireSlotBuildsTable {
  owner: string;
  slot_id: string;
  app_id: string;
  started_at: Touched;
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
  wire_apps: WireAppsTable;
  wire_app_versions: WireAppVersionsTable;
  wire_app_trail: WireAppTrailTable;
  wire_slots: WireSlotsTable;
  wire_placements: WirePlacementsTable;
  wire_slot_builds: WireSlotBuildsTable;
}
