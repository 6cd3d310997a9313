import { PGlite } from '@electric-sql/pglite';
import { STORE_PARSERS } from './int8.js';
import { ENGINE_SETTINGS, PreparedPGlite } from './pglite-prepared.js';

/** PGlite in this thread. */
export class InlinePGlite extends PreparedPGlite {
  private constructor(readonly pglite: PGlite) {
    super({
      execProtocol: (message) => pglite.execProtocol(message),
      serializers: pglite.serializers,
      parsers: pglite.parsers,
      isInTransaction: () => pglite.isInTransaction(),
      runExclusive: (work) => pglite._runExclusiveQuery(work),
      listen: (channel, handler) => pglite.listen(channel, handler),
      close: () => pglite.close(),
    });
  }

  /** Opens the engine on `dataDir` (in memory without one), or in memory from an image of one. */
  static async open(dataDir: string | undefined, image?: Blob): Promise<InlinePGlite> {
    const pglite = new PGlite({
      ...(dataDir ? { dataDir } : {}),
      ...(image ? { loadDataDir: image } : {}),
      parsers: STORE_PARSERS,
    });
    await pglite.waitReady;
    await pglite.exec(ENGINE_SETTINGS);
    return new InlinePGlite(pglite);
  }

  /** The engine's data folder as an uncompressed tarball (what `open` takes as an image). */
  dump(): Promise<Blob> {
    return this.pglite.dumpDataDir('none');
  }
}
