const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whether `value` is a UUID in its canonical text form (so a query against a uuid column cannot fail on it). */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}
