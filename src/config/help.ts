/**
 * `taskgate --help`: every flag, grouped, with its default read from the schema so the two cannot drift.
 */
import { defaultOf, expectation, frontDefaultsOf } from './introspect.js';
import { TASK_SUPPORT_VALUES } from './schema.js';
import { FLAG_SETTINGS, SETTINGS, envName, schemaOf, type Setting } from './settings.js';
import { FOREIGN_FLAGS } from './suggest.js';

const WIDTH = 100;
const COLUMN = 34;

const MS_UNITS: [number, string][] = [
  [86_400_000, 'd'],
  [3_600_000, 'h'],
  [60_000, 'min'],
  [1_000, 's'],
];
const BYTE_UNITS: [number, string][] = [
  [1024 ** 3, 'GiB'],
  [1024 ** 2, 'MiB'],
  [1024, 'KiB'],
];

/** 3600000 → "3600000 = 1 h", 33554432 → "33554432 = 32 MiB", when the value divides evenly. */
function readable(value: number, units: [number, string][]): string {
  const unit = units.find(([size]) => value >= size && value % size === 0);
  return unit === undefined ? String(value) : `${value} = ${value / unit[0]}\u00a0${unit[1]}`;
}

function defaultText(setting: Setting): string {
  const byFront = frontDefaultsOf(setting.path.join('.'));
  if (byFront === undefined) return valueText(setting, defaultOf(setting.path.join('.')));
  return `${valueText(setting, byFront.stdio)} over stdio, ${valueText(setting, byFront.http)} on the HTTP front`;
}

function valueText(setting: Setting, value: unknown): string {
  // The setting's own value, also for a --no-X flag: "--no-status-notifications (default on)".
  if (setting.sets !== undefined) return value === true ? 'on' : 'off';
  if (value === undefined) return 'none';
  if (typeof value !== 'number') return String(value);
  if (setting.metavar === 'MS') return readable(value, MS_UNITS);
  if (setting.metavar === 'BYTES') return readable(value, BYTE_UNITS);
  return String(value);
}

function describe(setting: Setting): string {
  const accepts =
    setting.metavar === 'LEVEL' || setting.metavar === 'MODE' ? `${expectation(schemaOf(setting))}; ` : '';
  return `${accepts}${setting.help} (default ${defaultText(setting)})`;
}

/** One flag: its name in the first column, its text wrapped in the second. */
function entry(name: string, text: string): string {
  const lines: string[] = [];
  let line = `  ${name}`.padEnd(COLUMN);
  if (name.length + 2 >= COLUMN) {
    lines.push(`  ${name}`);
    line = ''.padEnd(COLUMN);
  }
  for (const word of text.split(' ')) {
    if (line.trim() !== '' && line.length + word.length + 1 > WIDTH && line.length > COLUMN) {
      lines.push(line.trimEnd());
      line = ''.padEnd(COLUMN);
    }
    line += line.length === COLUMN ? word : ` ${word}`;
  }
  lines.push(line.trimEnd());
  // A no-break space keeps a number and its unit on one line.
  return lines.join('\n').replace(/\u00a0/g, ' ');
}

function group(title: string, entries: string[]): string {
  return `${title}\n${entries.join('\n')}\n`;
}

const settingEntries = (title: Setting['group']): string[] =>
  FLAG_SETTINGS.filter((setting) => setting.group === title).map((setting) =>
    entry(
      `--${setting.flag}${setting.metavar === undefined ? '' : ` ${setting.metavar}`}`,
      describe(setting),
    ),
  );

export const HELP = [
  `Usage: taskgate [flags] [-- command [args...]]
       taskgate check-config FILE [flags]
       taskgate print-config [flags] [-- command [args...]]

Puts MCP tasks (2025-11-25) in front of an MCP server started as "command" on stdio. Without a
command and without an upstream in the config file, taskgate serves the bundled example server
(examples/legacy-server.js).

  check-config FILE   check FILE (with the TASKGATE_* variables and flags) and exit: 0 when valid
  print-config        print the effective configuration as YAML on stdout, secrets masked
`,
  group('Configuration', [
    entry('--config FILE', 'a YAML (.yaml, .yml) or JSON (.json) config file (default none)'),
    entry(
      '--tool-task-support GLOB=VALUE',
      `taskSupport for tools whose name matches GLOB (* and ?), VALUE one of ${TASK_SUPPORT_VALUES.join(', ')}; ` +
        "repeatable; these rules go before the file's tools rules, first match wins (default: every tool optional)",
    ),
  ]),
  group('Upstream', [
    entry('-- command [args...]', 'start this MCP server on stdio (one per client session over HTTP)'),
    entry('--upstream-url URL', 'or use this Streamable HTTP MCP server (a sidecar); not with "--"'),
    entry('--servers FILE', 'or several servers: a desktop client\'s {"mcpServers": ...} JSON'),
    entry(
      '--upstream-header HEADER',
      'a header ("Name: value") sent to the --upstream-url server; repeatable',
    ),
  ]),
  group('Several servers (upstreams)', settingEntries('Several servers (upstreams)')),
  group('Tasks', settingEntries('Tasks')),
  group('Limits per caller', settingEntries('Limits per caller')),
  group('Task store', settingEntries('Task store')),
  group('Unwrap (clients without tasks)', settingEntries('Unwrap (clients without tasks)')),
  group('HTTP front', [
    ...settingEntries('HTTP front'),
    entry('--allowed-origin ORIGIN', 'a browser Origin allowed besides loopback ones; repeatable'),
    entry(
      '--auth-token TOKEN=SUBJECT',
      'a bearer token callers must present, and the subject it stands for; tasks are bound to it; ' +
        'repeatable; visible to every user of the machine in the process list: prefer auth.tokens in the config file',
    ),
  ]),
  group('Transport', settingEntries('Transport')),
  group('Output', [
    ...settingEntries('Output'),
    entry('-h, --help', 'this text'),
    entry('-v, --version', 'the version'),
  ]),
  group(
    "Coming from supergateway or mcp-proxy: their flags, and taskgate's way",
    Object.entries(FOREIGN_FLAGS).map(([flag, { instead }]) => entry(flag, instead)),
  ),
  `Environment
  Each single-value flag has a variable: TASKGATE_ and the flag's name in capitals, "-" as "_"
  (--max-ttl is TASKGATE_MAX_TTL, --config is TASKGATE_CONFIG). A --no-X flag's variable is
  TASKGATE_X=true|false. Flags win over variables, variables over the file, the file over defaults.
  These secrets have a variable and no flag (any user of the machine can read a command line):
${SETTINGS.filter((setting) => setting.secret === true)
  .map((setting) => entry(envName(setting), setting.help))
  .join('\n')}
`,
].join('\n');
