import { z } from 'zod';
import { BIDI_CONTROLS, CONTROL_CHARACTERS, VISIBLE_CHARACTER } from '../../internal/readable-text.js';

/**
 * Text people read, in pages and terminals: 1 to `max` characters once trimmed, no control
 * characters (a terminal acts on them), no bidi embedding, override or isolate controls
 * (U+202A to U+202E, U+2066 to U+2069) or direction marks (U+200E, U+200F, U+061C): they reorder
 * the text around them, so a name could read as another (the workspace an invitation names,
 * say); and at least one character that shows, so no name is blank on the page.
 */
export const readableText = (max: number) =>
  z
    .string()
    .trim()
    .min(1)
    .max(max)
    .refine((name) => !CONTROL_CHARACTERS.test(name), 'must not contain control characters')
    .refine((name) => !BIDI_CONTROLS.test(name), 'must not contain bidirectional text controls')
    .refine((name) => VISIBLE_CHARACTER.test(name), 'must contain a visible character');

/** A workspace's, a user's, an app's, a key's name: readable text of 1 to 100 characters. */
export const displayName = readableText(100);
