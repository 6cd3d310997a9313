/**
 * How the app's own relative imports are written, read from its setup as its compiler reads it:
 * the generated wiring must run wherever the app runs (tsx, a bundler, or plain Node after `tsc`).
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { CompilerOptions } from 'typescript';

type TypeScript = typeof import('typescript');

function typescript(): TypeScript {
  return createRequire(import.meta.url)('typescript') as TypeScript;
}

/**
 * The compiler options of the app's tsconfig.json (else jsconfig.json), `extends` followed, or
 * null when there is none or it does not parse.
 */
export function tsconfigOptions(dir: string): CompilerOptions | null {
  const ts = typescript();
  const file = ['tsconfig.json', 'jsconfig.json'].map((name) => join(dir, name)).find(existsSync);
  if (!file) return null;
  const read = ts.readConfigFile(file, ts.sys.readFile);
  if (read.error) return null;
  // The app's files are not listed: only the options are needed.
  return ts.parseJsonConfigFileContent(read.config, { ...ts.sys, readDirectory: () => [] }, dir).options;
}

/** The extension a relative import of a TypeScript module of the app ends with: '' for none. */
export type ImportExtension = '' | '.js' | '.ts';

/**
 * `.ts` when the app imports TypeScript files by their own name (Node's type stripping, or `tsc`
 * rewriting them); `.js` when Node resolves its output (moduleResolution node16/nodenext, or an
 * ES module package with no bundler resolution: Node's ESM loader takes no extensionless path,
 * and tsx, tsc and bundlers all read `./x.js` as `./x.ts`); else none, as a bundler or CommonJS
 * app writes them.
 */
export function relativeImportExtension(dir: string, pkg: Record<string, unknown>): ImportExtension {
  const ts = typescript();
  const options = tsconfigOptions(dir) ?? {};
  if (options.rewriteRelativeImportExtensions || options.allowImportingTsExtensions) return '.ts';
  const resolution = options.moduleResolution ?? impliedResolution(ts, options.module);
  if (resolution === ts.ModuleResolutionKind.Node16 || resolution === ts.ModuleResolutionKind.NodeNext)
    return '.js';
  if (resolution === ts.ModuleResolutionKind.Bundler) return '';
  return pkg.type === 'module' ? '.js' : '';
}

/**
 * The resolution a `module` setting implies when `moduleResolution` is not set, as the compiler
 * reads it: node16 to nodenext (node18 and node20 between them) resolve as Node does; preserve
 * as a bundler; anything else, undefined (node10 or classic).
 */
function impliedResolution(ts: TypeScript, module: CompilerOptions['module']) {
  if (module === undefined) return undefined;
  if (module >= ts.ModuleKind.Node16 && module <= ts.ModuleKind.NodeNext)
    return ts.ModuleResolutionKind.NodeNext;
  if (module === ts.ModuleKind.Preserve) return ts.ModuleResolutionKind.Bundler;
  return undefined;
}

/** A relative specifier with the app's extension, when it has none (`./ai` -> `./ai.js`). */
export function withImportExtension(specifier: string, extension: ImportExtension): string {
  if (!specifier.startsWith('.') || /\.[cm]?[jt]sx?$/.test(specifier)) return specifier;
  return `${specifier}${extension}`;
}
