/** C0 and C1 control characters: a terminal acts on them. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is matched
export const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f-\u009f]/;

/**
 * Bidi embedding, override and isolate controls, which reorder the text around them, and the
 * direction marks (U+200E, U+200F, U+061C), which invisibly change where neutral characters go.
 */
export const BIDI_CONTROLS = /[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]/;

/**
 * A character that shows: a letter, number, punctuation or symbol, but none of those that draw
 * nothing (a Hangul filler is a letter, a blank Braille cell a symbol). A name of blanks, zero-width spaces or joiners alone
 * reads as no name at all.
 */
export const VISIBLE_CHARACTER = /(?![\u115f\u1160\u3164\uffa0\u2800])[\p{L}\p{N}\p{P}\p{S}]/u;

/**
 * A name someone else chose (an identity provider's `name` claim), made readable: control and
 * bidi controls dropped, blanks trimmed, cut to `max` characters (code points, never half of
 * one). Empty when nothing readable is left.
 */
export function readableName(raw: string, max: number): string {
  const cleaned = raw
    .replace(new RegExp(CONTROL_CHARACTERS.source, 'g'), '')
    .replace(new RegExp(BIDI_CONTROLS.source, 'g'), '')
    .trim();
  return Array.from(cleaned).slice(0, max).join('').trim();
}
