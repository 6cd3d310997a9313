/**
 * Rebasing a remix (`rebase-pin`): the host's current seed of the remix's component, with the
 * remix's whole trail of wishes replayed onto it one wish at a time, becomes one new version of
 * the remix on the new baseline, its trail kept.
 *
 * Each wish goes through a replayer (the composition's `apps.replay`, else the service's language
 * model, one call per wish), and each document it answers passes the same checks as any build
 * (the Kit and the host's tools, then one real run of its queries as the person). All or nothing:
 * the first wish that fails stops the replay and nothing is written; the outcome says how many
 * wishes were replayed, which one failed and how many were left.
 *
 * @see docs/apps.md "Rebasing a remix"
 */
import { jsonSchema, type LanguageModel, streamText, tool } from 'ai';
import type { AuditLog } from '../../agent/audit.js';
import type { ToolContext, ToolRegistry } from '../../agent/tools.js';
import { type AppDocument, contentHash, type Problem } from '../../apps/index.js';
import { withinLimit } from '../../internal/within-limit.js';
import type { AppReplayer } from '../options.js';
import { appKit, type DocumentChecker } from './app-checks.js';
import type { Seed } from './app-seeds.js';
import type { AppStore, AppWithDocument } from './app-store.js';

/** How long a rebase's whole replay may take by default (`apps.rebaseTimeLimitMs`). */
export const DEFAULT_REBASE_TIME_LIMIT_MS = 120_000;

/** The replay of a trail: the document it ends on, or where it stopped. */
export type ReplayOutcome =
  | { ok: true; document: AppDocument; replayed: number }
  | { ok: false; stop: ReplayStop };

/** Where a replay stopped: the wishes replayed before it, the one that failed (and why), the rest. */
export interface ReplayStop {
  replayed: number;
  failed: 1;
  remaining: number;
  wish: string;
  reason: string;
}

/**
 * Applies `wishes` in order to `start` through `replay`, checking every document it answers as
 * the person in `context`. An empty trail ends on `start` itself. The whole replay gets
 * `timeLimitMs`: past it the wish in flight is aborted (its replayer and checks get a signal that
 * aborts) and the replay stops on that wish.
 */
export async function replayTrail(input: {
  start: AppDocument;
  wishes: readonly string[];
  replay: AppReplayer;
  checker: DocumentChecker;
  context: ToolContext;
  timeLimitMs?: number;
}): Promise<ReplayOutcome> {
  const limitMs = input.timeLimitMs ?? DEFAULT_REBASE_TIME_LIMIT_MS;
  /** The wish in flight. */
  let at = 0;
  const stop = (reason: string): ReplayOutcome => ({
    ok: false,
    stop: {
      replayed: at,
      failed: 1,
      remaining: input.wishes.length - at - 1,
      wish: input.wishes[at]!,
      reason,
    },
  });
  const tooLong = `the rebase took longer than ${limitMs / 1000} s`;
  const outcome = await withinLimit(
    async (signal): Promise<ReplayOutcome> => {
      const context = { ...input.context, signal };
      let document = input.start;
      for (const [index, wish] of input.wishes.entries()) {
        // Past the time limit nobody waits for this loop any more: it asks the replayer nothing
        // more (and leaves `at` on the wish that ran out of time).
        if (signal.aborted && !input.context.signal.aborted) return stop(tooLong);
        at = index;
        let answer: unknown;
        try {
          answer = await input.replay({ document, wish, signal });
        } catch (error) {
          return stop(`the replay failed: ${(error as Error)?.message || String(error)}`);
        }
        if (answer === undefined || answer === null) return stop('the replay answered no document');
        const checked = await input.checker.check(answer, context);
        if (!checked.ok) return stop(`the document is refused: ${problemWords(checked.problems)}`);
        document = checked.document;
      }
      return { ok: true, document, replayed: input.wishes.length };
    },
    { signal: input.context.signal, limitMs, reason: 'the rebase took too long' },
  );
  return outcome === 'timed-out' ? stop(tooLong) : outcome;
}

/** What `rebasePin` needs: where apps are kept, the host's seeds, the replayer and the checks. */
export interface RebaseDeps {
  store: AppStore;
  seeds: ReadonlyMap<string, Seed>;
  replay: AppReplayer;
  checker: DocumentChecker;
  audit: Pick<AuditLog, 'record'>;
  /** How long the whole replay may take (`apps.rebaseTimeLimitMs`); the default otherwise. */
  timeLimitMs?: number;
}

export type RebaseOutcome =
  | { status: 'rebased'; app: AppWithDocument; replayed: number }
  /** A missing app and another person's answer alike. */
  | { status: 'not_found' }
  | { status: 'not_a_remix'; app: AppWithDocument }
  | { status: 'baseline_unknown'; app: AppWithDocument }
  | { status: 'not_drifted'; app: AppWithDocument }
  /** The app gained a version since the one the rebase started from. */
  | { status: 'moved'; app: AppWithDocument }
  | { status: 'failed'; app: AppWithDocument; stop: ReplayStop };

/**
 * Moves the person's remix onto its component's current seed, all or nothing. `fromVersion`
 * (default: the version read when the rebase starts) is the version the replay must still find:
 * an edit that lands meanwhile is not in the replay, so the rebase is then refused as `moved`.
 */
export async function rebasePin(
  deps: RebaseDeps,
  input: { appId: string; fromVersion?: number | undefined },
  context: ToolContext,
): Promise<RebaseOutcome> {
  const owner = context.principal.subject;
  const app = await deps.store.getApp(owner, input.appId);
  if (!app) return { status: 'not_found' };
  if (app.kind === 'app' || !app.baselineKey) return { status: 'not_a_remix', app };
  const seed = deps.seeds.get(app.baselineKey);
  if (!seed) return { status: 'baseline_unknown', app };
  if (seed.hash === app.baselineHash) return { status: 'not_drifted', app };
  const fromVersion = input.fromVersion ?? app.version;
  if (fromVersion !== app.version) return { status: 'moved', app };
  const wishes = ((await deps.store.trail(owner, app.id)) ?? []).map((w) => w.wish);
  const replayed = await replayTrail({
    start: seed.document,
    wishes,
    replay: deps.replay,
    checker: deps.checker,
    context,
    ...(deps.timeLimitMs ? { timeLimitMs: deps.timeLimitMs } : {}),
  });
  if (!replayed.ok) return { status: 'failed', app, stop: replayed.stop };
  const saved = await deps.store.rebase(owner, app.id, {
    fromVersion,
    baselineHash: seed.hash,
    document: replayed.document as unknown as Record<string, unknown>,
    contentHash: contentHash(replayed.document),
    wishes,
  });
  if (!saved.ok) {
    // Moved while the replay ran: answer with the app as it is now, whose version the edit raised.
    const current = saved.reason === 'moved' ? await deps.store.getApp(owner, app.id) : null;
    return current ? { status: 'moved', app: current } : { status: 'not_found' };
  }
  const rebased = await deps.store.getApp(owner, app.id);
  if (!rebased) return { status: 'not_found' };
  deps.audit.record(owner, 'app.rebased', {
    appId: app.id,
    version: saved.version,
    replayed: replayed.replayed,
  });
  return { status: 'rebased', app: rebased, replayed: replayed.replayed };
}

/** The tool the replay's model must call: its one way to answer. */
const APPLY_WISH = 'apply_wish';

/**
 * The default replayer: the service's language model, one call per wish, told the Kit and the
 * host's tools and made to answer through the single tool `apply_wish({ document })`. A model
 * that calls no tool answers nothing, so the wish fails. No model configured: every wish fails.
 */
export function modelReplayer(model: LanguageModel | null, hostTools: ToolRegistry): AppReplayer {
  return async ({ document, wish, signal }) => {
    if (!model) throw new Error('no language model is configured to replay the wish');
    const result = streamText({
      model,
      system: replaySystem(hostTools),
      prompt: `The app document now:\n${JSON.stringify(document)}\n\nThe person's wish: ${wish}`,
      tools: {
        [APPLY_WISH]: tool({
          description: 'Answers the whole app document with the wish applied.',
          inputSchema: jsonSchema<{ document: Record<string, unknown> }>({
            type: 'object',
            properties: { document: { type: 'object', description: 'the whole new app document' } },
            required: ['document'],
            additionalProperties: false,
          }),
        }),
      },
      toolChoice: 'required',
      ...(signal ? { abortSignal: signal } : {}),
      // The failure surfaces where the calls are read below; nothing to log twice.
      onError: () => {},
    });
    const calls = await result.toolCalls;
    const call = calls.find((c) => c.toolName === APPLY_WISH);
    if (!call) throw new Error('the model answered no document');
    return (call.input as { document?: unknown } | undefined)?.document ?? null;
  };
}

function replaySystem(hostTools: ToolRegistry): string {
  return [
    'You update an app document (a screen built from the Kit below) so that it does what the person wished, and nothing else.',
    `Answer by calling ${APPLY_WISH} once with the whole new document: { version: 1, title, queries?, state?, root }.`,
    'Keep everything the wish does not change exactly as it is. Use only the Kit components and host tools listed here; a query may only use a tool marked query: true.',
    `The Kit and the host's tools:\n${JSON.stringify(appKit(hostTools))}`,
  ].join('\n');
}

/** How many of a refusal's problems its words list (the rest are counted). */
const PROBLEMS_LISTED = 5;

export function problemWords(problems: readonly Problem[]): string {
  const listed = problems
    .slice(0, PROBLEMS_LISTED)
    .map((p) => (p.path ? `${p.path}: ${p.message}` : p.message));
  const more = problems.length > PROBLEMS_LISTED ? `; and ${problems.length - PROBLEMS_LISTED} more` : '';
  return `${listed.join('; ')}${more}`;
}

/** A stopped replay in one sentence. */
export function stopWords(stop: ReplayStop): string {
  return `replayed ${stop.replayed}, failed ${stop.failed}, remaining ${stop.remaining}: the wish ${JSON.stringify(stop.wish)} could not be replayed (${stop.reason}); nothing was saved`;
}
