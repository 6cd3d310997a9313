import { randomBytes } from 'node:crypto';

/** A prefixed random id (`thr_…`, `run_…`, `apr_…`, `grt_…`, `msg_…`, `atm_…`, `fil_…`, `chb_…`, `app_…`): 16 random bytes, base64url. */
export function newId(prefix: IdPrefix): string {
  return `${prefix}_${randomBytes(16).toString('base64url')}`;
}

type IdPrefix = 'thr' | 'run' | 'apr' | 'grt' | 'msg' | 'atm' | 'fil' | 'chb' | 'app';

/** Whether `value` has the shape `newId(prefix)` gives: how a list refuses a cursor it never issued. */
export function isIdOf(prefix: IdPrefix, value: string): boolean {
  return new RegExp(`^${prefix}_[A-Za-z0-9_-]{22}$`).test(value);
}

/** Ids a client may choose for a thread (useChat generates its own chat id). */
export const CLIENT_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
