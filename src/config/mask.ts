/**
 * Secrets hidden from a printed config: every value of an upstream's `env` (and `headers`), any value
 * whose key looks like a credential, the value of a credential-looking upstream argument
 * (`--token=x`, `--api-key x`), and in any URL the password (`redis://:x@host`) and every query value
 * (`?api_key=x`: a query is where many services take their key). Logs name URLs and commands the same way.
 */
export const MASK = '********';

const SECRET_NAME = /token|secret|passw(or)?d|authori[sz]ation|api[-_]?key|credential|cookie/i;

/** A setting or key whose value is a credential: never shown. */
export const isSecretName = (name: string): boolean => SECRET_NAME.test(name);
/** Maps whose every value is masked: an environment or HTTP headers routinely carry credentials. */
const SECRET_MAPS = new Set(['env', 'headers']);
/** `scheme://user:` then the password, up to the `@` that ends the userinfo. */
const URL_PASSWORD = /^([a-z][a-z0-9+.-]*:\/\/[^/?#@:\s]*:)[^/?#@\s]+@/i;
const URL_START = /^[a-z][a-z0-9+.-]*:\/\/\S*$/i;

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
  return typeof value === 'string' ? maskUrl(value) : value;
}

/** A URL with its password and query values masked; other text as it is. */
export function maskUrl(text: string): string {
  if (!URL_START.test(text)) return text;
  const masked = text.replace(URL_PASSWORD, `$1${MASK}@`);
  const at = masked.indexOf('?');
  if (at === -1) return masked;
  const hash = masked.indexOf('#', at);
  const end = hash === -1 ? masked.length : hash;
  const params = masked
    .slice(at + 1, end)
    .split('&')
    .map((pair) => {
      const equals = pair.indexOf('=');
      return equals === -1 ? pair : `${pair.slice(0, equals)}=${MASK}`;
    });
  return `${masked.slice(0, at + 1)}${params.join('&')}${masked.slice(end)}`;
}

/** The command line of an upstream, for logs: its arguments masked as print-config masks them. */
export function maskCommand(command: string, args: readonly string[]): string {
  return [command, ...maskArgs([...args])].join(' ');
}

function maskArgs(args: unknown[]): unknown[] {
  return args.map((arg, i) => {
    if (typeof arg !== 'string') return arg;
    if (URL_START.test(arg)) return maskUrl(arg);
    const inline = /^(--?[^=]+)=/.exec(arg);
    if (inline && SECRET_NAME.test(inline[1]!)) return `${inline[1]}=${MASK}`;
    const previous = args[i - 1];
    const follows = typeof previous === 'string' && /^--?[^=]+$/.test(previous) && SECRET_NAME.test(previous);
    return follows && !arg.startsWith('-') ? MASK : arg;
  });
}
