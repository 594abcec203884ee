/**
 * The config schema read as data: its setting paths, what each accepts, and its defaults. Help text,
 * problem messages and the README check are derived from here so they cannot drift from the schema.
 */
import { z } from 'zod';
import { ConfigSchema, FRONT_DEFAULTS } from './schema.js';

export type ConfigPath = readonly (string | number)[];

/** `tools[2].ttl`; the root is `(root)`. */
export function formatPath(path: ConfigPath): string {
  const text = path
    .map((part, i) => (typeof part === 'number' ? `[${part}]` : i === 0 ? part : `.${part}`))
    .join('');
  return text || '(root)';
}

/** The schema with its optional/default wrappers taken off. */
export function unwrap(schema: z.ZodType): z.ZodType {
  let inner = schema;
  while (
    inner instanceof z.ZodOptional ||
    inner instanceof z.ZodDefault ||
    inner instanceof z.ZodPrefault ||
    inner instanceof z.ZodNullable
  ) {
    inner = inner.unwrap() as z.ZodType;
  }
  return inner;
}

/** The schema of the value at `path` (numbers index lists), or undefined when no setting is there. */
export function schemaAt(path: ConfigPath, root: z.ZodType = ConfigSchema): z.ZodType | undefined {
  let schema: z.ZodType | undefined = root;
  for (const part of path) {
    const inner: z.ZodType = unwrap(schema);
    if (inner instanceof z.ZodObject && typeof part === 'string') {
      schema = (inner.shape as Record<string, z.ZodType>)[part];
    } else if (inner instanceof z.ZodArray && typeof part === 'number') {
      schema = inner.element as z.ZodType;
    } else if (inner instanceof z.ZodRecord && typeof part === 'string') {
      schema = inner.valueType as z.ZodType;
    } else return undefined;
    if (schema === undefined) return undefined;
  }
  return schema;
}

/** The keys an object at `path` accepts (empty when there is no object there). */
export function keysAt(path: ConfigPath): string[] {
  const schema = schemaAt(path);
  const inner = schema && unwrap(schema);
  return inner instanceof z.ZodObject ? Object.keys(inner.shape) : [];
}

/**
 * Every leaf setting, as a path written the way the README writes it: `tasks.maxTtl`, `tools[].ttl`,
 * `upstream.env` (a map of names to values is one setting).
 */
export function leafPaths(schema: z.ZodType = ConfigSchema, prefix = ''): string[] {
  const inner = unwrap(schema);
  if (inner instanceof z.ZodObject) {
    return Object.entries(inner.shape as Record<string, z.ZodType>).flatMap(([key, child]) =>
      leafPaths(child, prefix === '' ? key : `${prefix}.${key}`),
    );
  }
  if (inner instanceof z.ZodArray && unwrap(inner.element as z.ZodType) instanceof z.ZodObject) {
    return leafPaths(inner.element as z.ZodType, `${prefix}[]`);
  }
  return [prefix];
}

const DEFAULTS: unknown = ConfigSchema.parse({});

/** A setting's default on each front, for the settings whose default depends on the front. */
export function frontDefaultsOf(path: string): { stdio: unknown; http: unknown } | undefined {
  const [section, key] = path.split('.');
  const on = (front: keyof typeof FRONT_DEFAULTS): unknown =>
    (FRONT_DEFAULTS[front] as Record<string, Record<string, unknown> | undefined>)[section!]?.[key!];
  const http = on('http');
  return http === undefined ? undefined : { stdio: on('stdio'), http };
}

/** The default of a setting (`tasks.maxTtl`), or undefined when it has none (or one per front). */
export function defaultOf(path: string): unknown {
  let value = DEFAULTS;
  for (const part of path.split('.')) {
    // In a section that is absent unless given (upstream), the setting's own default.
    if (typeof value !== 'object' || value === null) return ownDefault(path);
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

function ownDefault(path: string): unknown {
  const schema = schemaAt(path.split('.'));
  return schema instanceof z.ZodDefault ? (schema.def.defaultValue as unknown) : undefined;
}

function stringExpectation(minLength: number): string {
  if (minLength > 1) return `a string of at least ${minLength} characters`;
  return minLength === 1 ? 'a non-empty string' : 'a string';
}

/** What a value must look like, for a person: "an integer from 1 to 86400000", "one of a, b". */
export function expectation(schema: z.ZodType): string {
  const inner = unwrap(schema);
  if (inner instanceof z.ZodNumber) return numberExpectation(inner);
  if (inner instanceof z.ZodURL) return urlExpectation(inner);
  if (inner instanceof z.ZodString) return stringExpectation(inner.minLength ?? 0);
  if (inner instanceof z.ZodBoolean) return 'true or false';
  if (inner instanceof z.ZodEnum) return `one of ${inner.options.join(', ')}`;
  if (inner instanceof z.ZodArray) return `a list of ${plural(expectation(inner.element as z.ZodType))}`;
  if (inner instanceof z.ZodRecord) {
    return `a mapping of names to ${plural(expectation(inner.valueType as z.ZodType))}`;
  }
  if (inner instanceof z.ZodObject) return 'a mapping';
  return 'a valid value';
}

/** "a string" → "strings", for "a list of strings". */
function plural(single: string): string {
  if (single === 'a mapping') return 'mappings';
  const noun = single.replace(/^an? /, '');
  return noun === single ? single : noun.replace(/^(\S+)/, '$1s');
}

/** Schemes a URL setting may be limited to, named when its protocol pattern accepts them. */
const SCHEMES = ['http', 'https', 'redis', 'rediss', 'ws', 'wss'];

/** "a URL (redis:// or rediss://)". */
function urlExpectation(schema: z.ZodURL): string {
  const protocol = (schema.def as { protocol?: RegExp }).protocol;
  const schemes = protocol === undefined ? [] : SCHEMES.filter((scheme) => protocol.test(scheme));
  return schemes.length === 0 ? 'a URL' : `a URL (${schemes.map((scheme) => `${scheme}://`).join(' or ')})`;
}

function numberExpectation(schema: z.ZodNumber): string {
  const integer = schema.isInt === true;
  let low: number | undefined;
  let high: number | undefined;
  /** For a number that is not an integer, an exclusive bound cannot be moved to the next value. */
  let lowExcluded = false;
  let highExcluded = false;
  for (const check of schema.def.checks ?? []) {
    const def = check._zod.def as { check: string; value?: unknown; inclusive?: boolean };
    if (typeof def.value !== 'number') continue;
    const excluded = def.inclusive === false;
    const step = integer && excluded ? 1 : 0;
    if (def.check === 'greater_than' && def.value + step >= (low ?? -Infinity)) {
      low = def.value + step;
      lowExcluded = !integer && excluded;
    }
    if (def.check === 'less_than' && def.value - step <= (high ?? Infinity)) {
      high = def.value - step;
      highExcluded = !integer && excluded;
    }
  }
  const noun = integer ? 'integer' : 'number';
  const some = integer ? 'an integer' : 'a number';
  const above = low === undefined ? '' : lowExcluded ? `greater than ${low}` : `of at least ${low}`;
  const below = high === undefined ? '' : highExcluded ? `less than ${high}` : `of at most ${high}`;
  if (low !== undefined && high !== undefined) {
    return lowExcluded || highExcluded ? `${some} ${above} and ${below}` : `${some} from ${low} to ${high}`;
  }
  if (low === 1 && integer) return 'a positive integer';
  if (low === 0 && !lowExcluded) return `a non-negative ${noun}`;
  if (low !== undefined) return `${some} ${above}`;
  if (high !== undefined) return `${some} ${below}`;
  return some;
}
