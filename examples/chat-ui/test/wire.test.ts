/** What the chat page shows for a failed request: the wire's own message when there is one. */
import { describe, expect, it } from 'vitest';
import { errorCodeOf, wireErrorMessage } from '../src/wire';

describe('wireErrorMessage', () => {
  it('shows the message of the wire’s JSON error body, as useChat reports it', () => {
    const body = JSON.stringify({ error: { code: 'run_in_flight', message: 'A turn is running.' } });
    expect(wireErrorMessage(new Error(body))).toBe('A turn is running.');
  });

  it('shows any other text as it is, and says something when there is none', () => {
    expect(wireErrorMessage(new TypeError('Failed to fetch'))).toBe('Failed to fetch');
    expect(wireErrorMessage(new Error('{"message":"not the wire’s shape"}'))).toBe(
      '{"message":"not the wire’s shape"}',
    );
    expect(wireErrorMessage(new Error(''))).toBe('Something went wrong.');
  });
});

describe('errorCodeOf', () => {
  it('reads the code of the wire’s JSON error body, and nothing from any other text', () => {
    const body = JSON.stringify({ error: { code: 'run_in_flight', run_id: 'run_1', message: 'Busy.' } });
    expect(errorCodeOf(new Error(body))).toBe('run_in_flight');
    expect(errorCodeOf(new TypeError('Failed to fetch'))).toBeUndefined();
    expect(errorCodeOf(new Error('{"code":"run_in_flight"}'))).toBeUndefined();
  });
});
