import { z } from 'zod';

/**
 * A name people read, in pages and terminals (a workspace's, a user's, an app's, a key's): 1 to
 * 100 characters once trimmed, no control characters (a terminal acts on them), and no bidi
 * embedding, override or isolate controls (U+202A to U+202E, U+2066 to U+2069): they reorder the
 * text around them, so a name could read as another (the workspace an invitation names, say).
 */
export const displayName = z
  .string()
  .trim()
  .min(1)
  .max(100)
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  .refine((name) => !/[\u0000-\u001f\u007f-\u009f]/.test(name), 'must not contain control characters')
  .refine(
    (name) => !/[\u202a-\u202e\u2066-\u2069]/.test(name),
    'must not contain bidirectional text controls',
  );
