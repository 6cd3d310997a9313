/**
 * `Content-Disposition` for a download (RFC 6266): an ASCII `filename` fallback for old clients
 * and the exact name as `filename*` (RFC 8187, UTF-8, percent-encoded).
 */
export function contentDisposition(type: 'inline' | 'attachment', filename: string): string {
  // The fallback keeps printable ASCII only, without the quote and backslash a quoted string escapes.
  const fallback = filename.replace(/[^\x20-\x7e]|["\\%]/g, '_');
  return `${type}; filename="${fallback}"; filename*=UTF-8''${encodeRfc8187(filename)}`;
}

function encodeRfc8187(value: string): string {
  // encodeURIComponent leaves !'()* bare; RFC 8187's attr-char does not allow them.
  return encodeURIComponent(value).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}
