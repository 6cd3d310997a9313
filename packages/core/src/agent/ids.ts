import { randomBytes } from 'node:crypto';

/** A prefixed random id (`thr_…`, `run_…`, `apr_…`, `grt_…`, `msg_…`, `atm_…`, `fil_…`, `chb_…`, `app_…`): 16 random bytes, base64url. */
export function newId(prefix: 'thr' | 'run' | 'apr' | 'grt' | 'msg' | 'atm' | 'fil' | 'chb' | 'app'): string {
  return `${prefix}_${randomBytes(16).toString('base64url')}`;
}

/** Ids a client may choose for a thread (useChat generates its own chat id). */
export const CLIENT_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
