import { describe, expect, it } from 'vitest';
import { interpolate } from '../../src/config/interpolate.js';

describe('${VAR} in config values', () => {
  const env = { TOKEN: 's3cret', EMPTY: '', HOST: 'example.org' };

  it('replaces variables in strings at any depth, and leaves other values alone', () => {
    const { value, problems } = interpolate(
      { a: 'Bearer ${TOKEN}', b: ['${HOST}:${HOST}', 5, true, null], c: { d: 'x${EMPTY}y' } },
      env,
    );
    expect(problems).toEqual([]);
    expect(value).toEqual({
      a: 'Bearer s3cret',
      b: ['example.org:example.org', 5, true, null],
      c: { d: 'xy' },
    });
  });

  it('reads $${ as a literal ${', () => {
    expect(interpolate({ a: 'cost $${TOKEN} and $5 and $$' }, env).value).toEqual({
      a: 'cost ${TOKEN} and $5 and $$',
    });
  });

  it('names an unset variable, with the path of the value', () => {
    expect(interpolate({ upstream: { env: { KEY: '${NOPE}' } } }, env).problems).toEqual([
      {
        path: ['upstream', 'env', 'KEY'],
        text: 'upstream.env.KEY: ${NOPE} is used but the environment variable NOPE is not set',
      },
    ]);
  });

  it('refuses a reference that is not a variable name, and a ${ without its }', () => {
    expect(interpolate({ a: '${1X}', b: ['${TOKEN'] }, env).problems.map((p) => p.text)).toEqual([
      'a: "${1X}" is not a variable name (letters, digits and _)',
      'b[0]: "${TOKEN" has a "${" without its "}" (write $${ for a literal ${)',
    ]);
  });

  it('does not touch keys', () => {
    expect(interpolate({ '${TOKEN}': 'v' }, env).value).toEqual({ '${TOKEN}': 'v' });
  });
});
