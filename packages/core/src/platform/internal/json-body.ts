import type { Context } from 'hono';
import type { z } from 'zod';

/** Dashboard and runtime JSON bodies are small; anything bigger is refused unread. */
export const MAX_JSON_BODY_BYTES = 64 * 1024;

export type JsonBodyResult<T> = { ok: true; data: T } | { ok: false; status: 400 | 413; message: string };

/**
 * Reads and validates a JSON body: 413 past the size limit, 400 for malformed JSON or a body the
 * schema refuses, with a message naming the first offending field.
 */
export async function readJsonBody<S extends z.ZodType>(
  c: Context,
  schema: S,
  maxBytes = MAX_JSON_BODY_BYTES,
): Promise<JsonBodyResult<z.infer<S>>> {
  const declared = Number(c.req.header('content-length') ?? '0');
  if (declared > maxBytes) return { ok: false, status: 413, message: 'Request body too large' };
  let text: string;
  try {
    text = await c.req.text();
  } catch {
    return { ok: false, status: 400, message: 'Request body could not be read' };
  }
  if (Buffer.byteLength(text) > maxBytes)
    return { ok: false, status: 413, message: 'Request body too large' };
  let value: unknown;
  try {
    value = text.trim() === '' ? {} : JSON.parse(text);
  } catch {
    return { ok: false, status: 400, message: 'Request body must be valid JSON' };
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) return { ok: false, status: 400, message: describeIssue(parsed.error) };
  return { ok: true, data: parsed.data };
}

export function describeIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return 'Invalid request';
  const path = issue.path.join('.');
  return path ? `${path}: ${issue.message}` : issue.message;
}
