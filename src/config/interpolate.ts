/**
 * `${VAR}` in the string values of a config file, replaced by the environment variable VAR (secrets stay
 * out of the file). `$${` stands for a literal `${`. An unset variable is a problem naming it; a set but
 * empty one is used as it is.
 */
import { formatPath, type ConfigPath } from './introspect.js';
import type { Problem } from './problems.js';

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export interface Interpolated {
  value: unknown;
  problems: Problem[];
}

export function interpolate(value: unknown, env: Readonly<Record<string, string | undefined>>): Interpolated {
  const problems: Interpolated['problems'] = [];
  const walk = (node: unknown, at: ConfigPath): unknown => {
    if (typeof node === 'string') {
      return substitute(node, env, (text) => problems.push({ path: at, text: `${formatPath(at)}: ${text}` }));
    }
    if (Array.isArray(node)) return node.map((item, i) => walk(item, [...at, i]));
    if (typeof node === 'object' && node !== null) {
      return Object.fromEntries(Object.entries(node).map(([key, item]) => [key, walk(item, [...at, key])]));
    }
    return node;
  };
  return { value: walk(value, []), problems };
}

function substitute(
  text: string,
  env: Readonly<Record<string, string | undefined>>,
  problem: (text: string) => void,
): string {
  let out = '';
  let at = 0;
  for (let start = text.indexOf('${'); start !== -1; start = text.indexOf('${', at)) {
    if (start > 0 && text[start - 1] === '$') {
      out += text.slice(at, start - 1) + '${';
      at = start + 2;
      continue;
    }
    out += text.slice(at, start);
    const end = text.indexOf('}', start);
    if (end === -1) {
      problem(`"${text}" has a "\${" without its "}" (write $\${ for a literal \${)`);
      return text;
    }
    const name = text.slice(start + 2, end);
    const value = env[name];
    if (!NAME.test(name)) problem(`"\${${name}}" is not a variable name (letters, digits and _)`);
    else if (value === undefined)
      problem(`\${${name}} is used but the environment variable ${name} is not set`);
    else out += value;
    at = end + 1;
  }
  return out + text.slice(at);
}
