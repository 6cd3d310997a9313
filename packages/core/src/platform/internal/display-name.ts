import { z } from 'zod';

/**
 * A name people read, in pages and terminals (a workspace's, a user's, an app's, a key's): 1 to
 * 100 characters once trimmed, and no control characters (a terminal acts on them).
 */
export const displayName = z
  .string()
  .trim()
  .min(1)
  .max(100)
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  .refine((name) => !/[\u0000-\u001f\u007f-\u009f]/.test(name), 'must not contain control characters');
