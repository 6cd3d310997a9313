import type { Migration } from 'kysely';
import * as foundation from './0001-foundation.js';

/** Every migration, in order. Names sort by their numeric prefix; never rename a shipped one. */
export const MIGRATIONS: Record<string, Migration> = {
  '0001-foundation': foundation,
};
