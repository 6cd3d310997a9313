import { describe, expect, it } from 'vitest';
import { ConfigError, readPlatformEnv } from './config.js';

describe('readPlatformEnv', () => {
  it('reads the variables, trimming trailing slashes and treating blanks as unset', () => {
    expect(
      readPlatformEnv({
        SERVICE_BASE_URL: 'https://api.example.com/',
        SERVICE_IDP_URL: ' ',
        SERVICE_TRUSTED_PROXIES: '1',
        NODE_ENV: 'production',
      }),
    ).toEqual({ baseUrl: 'https://api.example.com', trustedProxies: 1, production: true });
  });

  it('names the variable that is wrong', () => {
    expect(() => readPlatformEnv({ SERVICE_BASE_URL: 'not a url' })).toThrow(ConfigError);
    expect(() => readPlatformEnv({ SERVICE_BASE_URL: 'ftp://x.example' })).toThrow(/SERVICE_BASE_URL/);
    expect(() => readPlatformEnv({ SERVICE_TRUSTED_PROXIES: '-1' })).toThrow(/SERVICE_TRUSTED_PROXIES/);
    expect(() => readPlatformEnv({ SERVICE_CORS_DOMAIN: 'https://x' })).toThrow(/SERVICE_CORS_DOMAIN/);
  });

  it('reads SERVICE_ADMIN_EMAILS as lowercased addresses and refuses anything else', () => {
    expect(
      readPlatformEnv({ SERVICE_ADMIN_EMAILS: ' Ops@Example.com, root@example.org ' }).adminEmails,
    ).toEqual(['ops@example.com', 'root@example.org']);
    expect(() => readPlatformEnv({ SERVICE_ADMIN_EMAILS: 'ops@example.com, not-an-email' })).toThrow(
      /SERVICE_ADMIN_EMAILS/,
    );
    expect(() => readPlatformEnv({ SERVICE_ADMIN_EMAILS: 'ops@example.com,,' })).toThrow(
      /SERVICE_ADMIN_EMAILS/,
    );
  });

  it('takes the Stripe keys together, and refuses one without the other', () => {
    expect(
      readPlatformEnv({ STRIPE_SECRET_KEY: 'sk_test_1', STRIPE_WEBHOOK_SECRET: 'whsec_1' }).stripe,
    ).toEqual({
      secretKey: 'sk_test_1',
      webhookSecret: 'whsec_1',
    });
    expect(readPlatformEnv({}).stripe).toBeUndefined();
    for (const env of [
      { STRIPE_SECRET_KEY: 'sk_test_1' },
      { STRIPE_WEBHOOK_SECRET: 'whsec_1', STRIPE_SECRET_KEY: ' ' },
    ]) {
      expect(() => readPlatformEnv(env)).toThrow(
        /STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET must be set together/,
      );
    }
  });
});
