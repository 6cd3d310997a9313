/**
 * The host components a person may remix through `POST /apps/seed`, from the composition's
 * `apps.seeds`: each component's starting document, checked once at startup against the Kit and
 * the host's tools, and its baseline hash: the document's content hash, or, when the seed names the
 * source hash `service sync` captured for the component, a hash of both (so a changed component
 * drifts its remixes as a changed document does). A seed whose document fails the checks refuses
 * the composition, so a refused document never reaches anyone's apps.
 *
 * @see docs/wire.md "Seeds"
 */
import { createHash } from 'node:crypto';
import { type AppDocument, type AppToolCatalog, contentHash, validateDocument } from '../../apps/index.js';
import { type AppSeed, CompositionError } from '../options.js';

export interface Seed {
  component: string;
  name: string;
  kind: 'remix' | 'review';
  document: AppDocument;
  /** The baseline's hash: of the starting document, and of the component's source when given. */
  hash: string;
}

export function checkSeeds(seeds: readonly AppSeed[], tools: AppToolCatalog): ReadonlyMap<string, Seed> {
  const checked = new Map<string, Seed>();
  for (const [index, seed] of seeds.entries()) {
    const validation = validateDocument(seed.document, { tools });
    if (!validation.ok) {
      const problems = validation.problems
        .slice(0, 5)
        .map((problem) => (problem.path ? `${problem.path}: ${problem.message}` : problem.message));
      const more = validation.problems.length > 5 ? `; and ${validation.problems.length - 5} more` : '';
      throw new CompositionError(
        `createService: apps.seeds[${index}] (${seed.component}).document is refused: ${problems.join('; ')}${more}`,
      );
    }
    checked.set(seed.component, {
      component: seed.component,
      name: seed.name.trim(),
      kind: seed.review ? 'review' : 'remix',
      document: validation.document,
      hash: baselineHash(validation.document, seed.sourceHash),
    });
  }
  return checked;
}

/**
 * A seed without a source hash keeps the document's content hash (what remixes made before a
 * source hash was given recorded); with one, a hash over both.
 */
function baselineHash(document: AppDocument, sourceHash: string | undefined): string {
  const documentHash = contentHash(document);
  if (sourceHash === undefined) return documentHash;
  return createHash('sha256').update(`${documentHash}:${sourceHash}`, 'utf8').digest('hex');
}
