import { DatabaseError } from 'pg';
import { describe, expect, it } from 'vitest';
import {
  isStoreUnavailable,
  retryWhileUnavailable,
  StoreUnavailableError,
  writeNowOrOnceBack,
} from './availability.js';

const sqlState = (code: string) => Object.assign(new DatabaseError('server says no', 0, 'error'), { code });
const errno = (code: string) => Object.assign(new Error(`connect ${code} 127.0.0.1:5432`), { code });

describe('isStoreUnavailable', () => {
  it('recognises a server that is down, restarting, or that dropped the connection', () => {
    for (const error of [
      new StoreUnavailableError(),
      errno('ECONNREFUSED'),
      errno('ECONNRESET'),
      errno('ETIMEDOUT'),
      sqlState('57P01'), // terminating connection due to administrator command
      sqlState('57P03'), // the database system is starting up
      sqlState('08006'), // connection failure
      sqlState('53300'), // too many connections
      new Error('Connection terminated unexpectedly'),
      new Error('timeout exceeded when trying to connect'),
      new Error('Client has encountered a connection error and is not queryable'),
      // Node's happy-eyeballs connect reports every address it tried.
      Object.assign(new AggregateError([errno('ECONNREFUSED'), errno('ECONNREFUSED')]), { code: undefined }),
      // Wrapped by whoever called the store.
      new Error('Could not settle', { cause: errno('ECONNREFUSED') }),
    ]) {
      expect(isStoreUnavailable(error), String(error)).toBe(true);
    }
  });

  it('leaves every other fault a fault: the statement was refused, not the connection', () => {
    for (const error of [
      sqlState('23505'), // unique violation
      sqlState('22P02'), // invalid text representation
      sqlState('40001'), // serialization failure
      sqlState('57014'), // query cancelled
      new Error('Connection terminated unexpectedly, or not'),
      new TypeError('x is undefined'),
      'ECONNREFUSED',
      null,
      undefined,
    ]) {
      expect(isStoreUnavailable(error), String(error)).toBe(false);
    }
  });

  it('stops at a cause chain that loops', () => {
    const a = new Error('a');
    const b = new Error('b', { cause: a });
    (a as { cause?: unknown }).cause = b;
    expect(isStoreUnavailable(a)).toBe(false);
  });
});

describe('retryWhileUnavailable', () => {
  it('writes again while the store is away, and not after any other failure', async () => {
    let attempts = 0;
    const blink = () =>
      ++attempts < 3 ? Promise.reject(new StoreUnavailableError()) : Promise.resolve('ok');
    expect(await retryWhileUnavailable(blink, 5000)).toBe('ok');
    expect(attempts).toBe(3);

    attempts = 0;
    const refused = () => {
      attempts++;
      return Promise.reject(sqlState('23503'));
    };
    await expect(retryWhileUnavailable(refused, 5000)).rejects.toMatchObject({ code: '23503' });
    expect(attempts).toBe(1);
  });

  it('gives up once its bound has passed', async () => {
    let attempts = 0;
    const away = () => {
      attempts++;
      return Promise.reject(new StoreUnavailableError());
    };
    await expect(retryWhileUnavailable(away, 250)).rejects.toBeInstanceOf(StoreUnavailableError);
    // At 0 and 100 ms: a third try (at 300 ms) would be past the bound.
    expect(attempts).toBe(2);
  });
});

describe('writeNowOrOnceBack', () => {
  it('fails at once while the store is away, and writes once it is back', async () => {
    let attempts = 0;
    let written = false;
    const forget = () => {
      if (++attempts < 3) return Promise.reject(new StoreUnavailableError());
      written = true;
      return Promise.resolve();
    };
    await expect(writeNowOrOnceBack(forget, 5000)).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(written).toBe(false);
    await expect.poll(() => written).toBe(true);
    expect(attempts).toBe(3);
  });
});
