/**
 * Caps on one app document. A document is refused on the first cap it passes, before its schema
 * is read, so a hostile document costs one bounded walk.
 */
export const APP_DOCUMENT_LIMITS = Object.freeze({
  /** The document as UTF-8 JSON. */
  maxBytes: 64 * 1024,
  /** Nodes in the UI tree. */
  maxNodes: 400,
  /** Levels of the UI tree (the root is level 1). */
  maxDepth: 16,
  /** Nesting of any JSON value in the document (objects and arrays, the tree included). */
  maxJsonDepth: 64,
  /** Named queries. */
  maxQueries: 16,
  /** Keys of local state. */
  maxStateKeys: 32,
  /** Characters of one binding path. */
  maxPathLength: 256,
  /** Problems reported for one document; the rest are counted, not listed. */
  maxProblems: 50,
});

/** Names of queries and state keys: an identifier, so they read the same in every language. */
export const NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
