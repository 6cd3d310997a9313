import type { Context } from 'hono';
import { z } from 'zod';
import { BodyNotUtf8Error, BodyTooLargeError, readBodyText } from '../../http/body.js';
import { parseJsonInput } from '../../http/input-guard.js';
import { describeIssues } from '../../http/issues.js';
import { PlatformError } from '../errors.js';

/** Dashboard and runtime JSON bodies are small; anything bigger is refused unread. */
export const MAX_JSON_BODY_BYTES = 64 * 1024;

export interface JsonBodyOptions {
  maxBytes?: number;
  /**
   * The refusal of a body past the size limit (413) or not the JSON expected (400). `bySchema`
   * is true when the body was JSON the schema refused: `message` then names the field.
   */
  refuse?: (status: 400 | 413, message: string, bySchema?: boolean) => PlatformError;
}

/** The dashboard's refusal: a flat body with code `INVALID_REQUEST`. */
const invalidRequest = (status: 400 | 413, message: string) =>
  new PlatformError(status, message, { code: 'INVALID_REQUEST' });

/**
 * Reads and validates a JSON body; an empty body reads as `{}`. Refuses (throws) with 413 past
 * the size limit, 400 for an unreadable or malformed body, one the input guard refuses (too deep,
 * a NUL or lone surrogate in a string) or one the schema refuses, with a message naming the
 * first offending field.
 */
export async function readJsonBody<S extends z.ZodType>(
  c: Context,
  schema: S,
  options: JsonBodyOptions = {},
): Promise<z.infer<S>> {
  const refuse = options.refuse ?? invalidRequest;
  let text: string;
  try {
    text = await readBodyText(c.req.raw, { maxBytes: options.maxBytes ?? MAX_JSON_BODY_BYTES });
  } catch (error) {
    if (error instanceof BodyTooLargeError) throw refuse(413, 'Request body too large');
    if (error instanceof BodyNotUtf8Error) throw refuse(400, 'Request body must be UTF-8 text');
    throw refuse(400, 'Request body could not be read');
  }
  // The shared guard: nesting capped, no NUL or lone surrogate in any string (see http/input-guard.ts).
  const input = parseJsonInput(text);
  if (!input.ok)
    throw refuse(400, input.reason === 'syntax' ? 'Request body must be valid JSON' : input.message);
  const parsed = schema.safeParse(input.value);
  if (!parsed.success)
    throw refuse(400, describeIssues(unknownFieldsFirst(parsed.error), { limit: 1 }), true);
  return parsed.data;
}

/**
 * The issues with an unknown field first: a field sent under a name the route does not take is
 * the mistake to fix, and a required field it then misses follows from it.
 */
function unknownFieldsFirst(error: z.ZodError): z.ZodError {
  const unknown = (issue: z.core.$ZodIssue) => issue.code === 'unrecognized_keys';
  return new z.ZodError([...error.issues.filter(unknown), ...error.issues.filter((i) => !unknown(i))]);
}
