/** C0 and C1 control characters: a terminal acts on them. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is matched
export const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f-\u009f]/;

/** Bidi embedding, override and isolate controls: they reorder the text around them. */
export const BIDI_CONTROLS = /[\u202a-\u202e\u2066-\u2069]/;

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
