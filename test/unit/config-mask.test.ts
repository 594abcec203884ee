import { describe, expect, it } from 'vitest';
import { MASK, maskSecrets } from '../../src/config/mask.js';

describe('maskSecrets', () => {
  it('masks every value of an upstream’s env', () => {
    expect(maskSecrets({ upstream: { command: 'node', env: { PLAIN: 'x', DEBUG: '1' } } })).toEqual({
      upstream: { command: 'node', env: { PLAIN: MASK, DEBUG: MASK } },
    });
  });

  it('masks any string whose key looks like a credential, at any depth', () => {
    const masked = maskSecrets({
      a: {
        apiKey: 'k',
        api_key: 'k',
        Authorization: 'Bearer x',
        clientSecret: 's',
        password: 'p',
        token: 't',
      },
      b: [{ refreshToken: 'r', name: 'keep' }],
      tokenCount: 5,
    });
    expect(masked).toEqual({
      a: {
        apiKey: MASK,
        api_key: MASK,
        Authorization: MASK,
        clientSecret: MASK,
        password: MASK,
        token: MASK,
      },
      b: [{ refreshToken: MASK, name: 'keep' }],
      tokenCount: 5,
    });
  });

  it('masks the value of a credential-looking argument, inline or next', () => {
    const args = ['-y', 'srv', '--token=abc', '--api-key', 'k1', '--password', '--verbose', '--name', 'me'];
    expect(maskSecrets({ args })).toEqual({
      args: ['-y', 'srv', `--token=${MASK}`, '--api-key', MASK, '--password', '--verbose', '--name', 'me'],
    });
  });

  it('leaves everything else as it is', () => {
    const config = {
      tasks: { maxTtl: 5 },
      tools: [{ match: 'x', immediateResponse: 'hi' }],
      logLevel: 'info',
    };
    expect(maskSecrets(config)).toEqual(config);
  });
});
