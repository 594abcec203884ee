/**
 * Secrets hidden from a printed config: every value of an upstream's `env` (and `headers`), any value
 * whose key looks like a credential, the value of a credential-looking upstream argument
 * (`--token=x`, `--api-key x`), and the password of any URL (`redis://:x@host`).
 */
export const MASK = '********';

const SECRET_NAME = /token|secret|passw(or)?d|authori[sz]ation|api[-_]?key|credential|cookie/i;
/** Maps whose every value is masked: an environment or HTTP headers routinely carry credentials. */
const SECRET_MAPS = new Set(['env', 'headers']);
/** `scheme://user:` then the password, up to the `@` that ends the userinfo. */
const URL_PASSWORD = /^([a-z][a-z0-9+.-]*:\/\/[^/?#@:\s]*:)[^/?#@\s]+@/i;

export function maskSecrets(value: unknown, key = ''): unknown {
  if (Array.isArray(value)) return key === 'args' ? maskArgs(value) : value.map((item) => maskSecrets(item));
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(
      Object.entries(value).map(([name, item]) => [
        name,
        SECRET_MAPS.has(key) || (SECRET_NAME.test(name) && typeof item === 'string')
          ? MASK
          : maskSecrets(item, name),
      ]),
    );
  }
  return typeof value === 'string' ? maskUrlPassword(value) : value;
}

function maskUrlPassword(text: string): string {
  return text.replace(URL_PASSWORD, `$1${MASK}@`);
}

function maskArgs(args: unknown[]): unknown[] {
  return args.map((arg, i) => {
    if (typeof arg !== 'string') return arg;
    if (URL_PASSWORD.test(arg)) return maskUrlPassword(arg);
    const inline = /^(--?[^=]+)=/.exec(arg);
    if (inline && SECRET_NAME.test(inline[1]!)) return `${inline[1]}=${MASK}`;
    const previous = args[i - 1];
    const follows = typeof previous === 'string' && /^--?[^=]+$/.test(previous) && SECRET_NAME.test(previous);
    return follows && !arg.startsWith('-') ? MASK : arg;
  });
}
