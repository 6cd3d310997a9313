import { describe, expect, it } from 'vitest';
import { ConfigError } from '../config.js';
import { readSshBroker } from './options.js';

const SECRET = 's'.repeat(32);

describe('readSshBroker', () => {
  it('is off when neither variable is set (blank counts as unset)', () => {
    expect(readSshBroker({})).toBeNull();
    expect(readSshBroker({ SERVICE_SSH_BROKER_URL: ' ', SERVICE_SSH_BROKER_SECRET: '' })).toBeNull();
  });

  it('reads both variables', () => {
    expect(
      readSshBroker({
        SERVICE_SSH_BROKER_URL: 'wss://ssh.example.com/v1',
        SERVICE_SSH_BROKER_SECRET: SECRET,
      }),
    ).toEqual({ url: 'wss://ssh.example.com/v1', secret: SECRET });
  });

  it('refuses one without the other, a non-WebSocket URL and a short secret, naming the variable only', () => {
    expect(() => readSshBroker({ SERVICE_SSH_BROKER_URL: 'ws://x.example' })).toThrow(ConfigError);
    expect(() => readSshBroker({ SERVICE_SSH_BROKER_SECRET: SECRET })).toThrow(/set together/);
    expect(() =>
      readSshBroker({ SERVICE_SSH_BROKER_URL: 'https://x.example', SERVICE_SSH_BROKER_SECRET: SECRET }),
    ).toThrow(/SERVICE_SSH_BROKER_URL/);
    const short = () =>
      readSshBroker({ SERVICE_SSH_BROKER_URL: 'ws://x.example', SERVICE_SSH_BROKER_SECRET: 'short' });
    expect(short).toThrow(/SERVICE_SSH_BROKER_SECRET: must be at least 32 characters/);
    expect(short).not.toThrow(/short/);
  });
});
