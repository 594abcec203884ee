/**
 * The effective config: flags over `TASKGATE_*` variables over the config file over the schema's defaults.
 * Every problem of every source is collected before anything is refused, so one run shows them all.
 */
import { readConfigFile } from './file.js';
import { readServersFile } from './servers-file.js';
import type { CommandLine } from './flags.js';
import { describeIssues } from './problems.js';
import { EffectiveConfigSchema, type Config, type ConfigInput } from './schema.js';
import { SETTINGS, assign, checkValue, envName, fromText, valueIn } from './settings.js';
import { didYouMean } from './suggest.js';

export class ConfigError extends Error {
  constructor(
    readonly problems: string[],
    source?: string,
  ) {
    const where = source === undefined ? '' : ` (${source})`;
    super(`Invalid configuration${where}:\n${problems.map((problem) => `  - ${problem}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** The variable naming a config file, for when `--config` is not given. */
export const CONFIG_ENV = 'TASKGATE_CONFIG';

export type Environment = Readonly<Record<string, string | undefined>>;

/**
 * Validates a merged config input, requirements across sources included; every problem is listed with its
 * path (`tasks.maxTtl: ...`).
 */
export function resolveConfig(input: ConfigInput): Config {
  const parsed = EffectiveConfigSchema.safeParse(input, { reportInput: true });
  if (parsed.success) return parsed.data;
  throw new ConfigError(describeIssues(parsed.error.issues).map((problem) => problem.text));
}

export interface Loaded {
  config: Config;
  /** The config file read, if any. */
  file?: string;
}

/**
 * Reads the config file (`--config`, else `TASKGATE_CONFIG`), the environment and the command line, and
 * merges them. `fallbackUpstream` is used when neither the command line nor the file names an upstream.
 */
export function loadConfig(
  commandLine: Pick<CommandLine, 'input' | 'configFile' | 'serversFile'>,
  env: Environment,
  fallbackUpstream?: ConfigInput['upstream'],
): Loaded {
  const flags = commandLine.input;
  const path = commandLine.configFile ?? (env[CONFIG_ENV] || undefined);
  const file = path === undefined ? undefined : readConfigFile(path, env);
  const fromEnv: Record<string, unknown> = {};
  const servers =
    commandLine.serversFile === undefined ? undefined : readServersFile(commandLine.serversFile);
  const problems = [
    ...(file?.problems ?? []),
    ...(servers?.problems ?? []),
    ...readEnvironment(env, fromEnv),
  ];
  for (const setting of SETTINGS) {
    const value = valueIn(flags, setting);
    const problem = value === undefined ? undefined : checkValue(setting, value, `--${setting.flag}`);
    if (problem !== undefined) problems.push(problem);
  }
  if (problems.length > 0) throw new ConfigError(problems, file?.problems.length ? file.path : undefined);

  const merged: Record<string, unknown> = structuredClone(file?.input ?? {});
  for (const source of [fromEnv, flags]) {
    for (const setting of SETTINGS) {
      const value = valueIn(source, setting);
      if (value !== undefined) assign(merged, setting, value);
    }
  }
  const rules = [...(flags.tools ?? []), ...((file?.input?.tools as unknown[] | undefined) ?? [])];
  if (rules.length > 0) merged.tools = rules;
  // The server comes whole from one place; how it is shared, from wherever those settings were given last.
  const { sharing, poolSize } = asSection(merged.upstream);
  if (servers?.upstreams !== undefined) {
    if (merged.upstreams !== undefined) {
      throw new ConfigError([
        `give the servers once: --servers ${servers.path} or upstreams in the config file, not both`,
      ]);
    }
    merged.upstreams = servers.upstreams;
  }
  // Several servers: no example server in their place, and `upstream` beside them is refused by the schema.
  const fallback = merged.upstreams === undefined ? fallbackUpstream : undefined;
  const upstream = [flags.upstream, merged.upstream, fallback].find(namesServer);
  if (upstream !== undefined) {
    merged.upstream = {
      ...upstream,
      ...(sharing === undefined ? {} : { sharing }),
      ...(poolSize === undefined ? {} : { poolSize }),
    };
  }
  // The repeatable flags: given, they replace the file's list.
  const tokens = flags.auth?.tokens;
  if (tokens !== undefined) merged.auth = { ...asSection(merged.auth), tokens };
  const origins = flags.http?.allowedOrigins;
  if (origins !== undefined) merged.http = { ...asSection(merged.http), allowedOrigins: origins };
  return { config: resolveConfig(merged as ConfigInput), ...(path === undefined ? {} : { file: path }) };
}

/** The `TASKGATE_*` variables, into `into`; returns the problems (an unknown name is one: likely a typo). */
function readEnvironment(env: Environment, into: Record<string, unknown>): string[] {
  const problems: string[] = [];
  const names = new Map(SETTINGS.map((setting) => [envName(setting), setting]));
  for (const [name, text] of Object.entries(env)) {
    if (!name.startsWith('TASKGATE_') || name === CONFIG_ENV || text === undefined || text === '') continue;
    const setting = names.get(name);
    if (setting === undefined) {
      problems.push(`${name}: not a taskgate variable${didYouMean(name, [...names.keys(), CONFIG_ENV], '')}`);
      continue;
    }
    const value = fromText(setting, text);
    const problem = checkValue(setting, value, name);
    if (problem === undefined) assign(into, setting, value);
    else problems.push(problem);
  }
  return problems;
}

const asSection = (value: unknown): Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};

const namesServer = (upstream: unknown): upstream is ConfigInput['upstream'] => {
  const section = asSection(upstream);
  return section.command !== undefined || section.url !== undefined;
};
