/**
 * The single-value settings that a flag and an environment variable can set, each once. The flag's name
 * gives the variable's: `--max-ttl` ↔ `TASKGATE_MAX_TTL`; a `--no-x` flag's variable is `TASKGATE_X` and
 * holds the setting itself (`TASKGATE_STATUS_NOTIFICATIONS=false`). What a value may be, and its
 * default, come from the schema.
 */
import { z } from 'zod';
import { schemaAt, unwrap } from './introspect.js';
import { isSecretName } from './mask.js';
import { expectedGot, whatIsWrong } from './problems.js';
import type { ConfigInput } from './schema.js';

export type SettingGroup =
  | 'Tasks'
  | 'Limits per caller'
  | 'Task store'
  | 'Unwrap (clients without tasks)'
  | 'HTTP front'
  | 'Several servers (upstreams)'
  | 'Transport'
  | 'Output';

export interface Setting {
  /** Where the value goes in the config. */
  path: readonly [string] | readonly [string, string];
  /** The flag, without its leading `--`. */
  flag: string;
  /** For a boolean flag: the value it sets. Other flags take a value, named by `metavar`. */
  sets?: boolean;
  metavar?: 'MS' | 'N' | 'BYTES' | 'LEVEL' | 'MODE' | 'HOST:PORT' | 'PATH' | 'URL' | 'PREFIX' | 'SECRET';
  /**
   * A secret: set by its variable or the file only, never by a flag, since any user of the machine can
   * read a process's command line. `flag` then only names the variable.
   */
  secret?: true;
  group: SettingGroup;
  help: string;
}

export const SETTINGS: readonly Setting[] = [
  {
    path: ['tasks', 'defaultTtl'],
    flag: 'default-ttl',
    metavar: 'MS',
    group: 'Tasks',
    help: 'ttl of a task created without one',
  },
  {
    path: ['tasks', 'maxTtl'],
    flag: 'max-ttl',
    metavar: 'MS',
    group: 'Tasks',
    help: 'largest ttl granted, whatever is asked',
  },
  {
    path: ['tasks', 'pollInterval'],
    flag: 'poll-interval',
    metavar: 'MS',
    group: 'Tasks',
    help: 'pollInterval suggested to clients',
  },
  {
    path: ['tasks', 'maxTasks'],
    flag: 'max-tasks',
    metavar: 'N',
    group: 'Tasks',
    help: 'tasks held at once, live and finished',
  },
  {
    path: ['tasks', 'maxResultBytes'],
    flag: 'max-result-bytes',
    metavar: 'BYTES',
    group: 'Tasks',
    help: 'bytes of finished results held at once',
  },
  {
    path: ['tasks', 'listPageSize'],
    flag: 'list-page-size',
    metavar: 'N',
    group: 'Tasks',
    help: 'tasks per page of tasks/list',
  },
  {
    path: ['tasks', 'exposeList'],
    flag: 'expose-task-list',
    sets: true,
    group: 'Tasks',
    help: 'serve tasks/list although tasks are not bound to an identity (anyone on the connection can list its tasks)',
  },
  {
    path: ['tasks', 'statusNotifications'],
    flag: 'no-status-notifications',
    sets: false,
    group: 'Tasks',
    help: 'do not send notifications/tasks/status',
  },
  {
    path: ['clientTasks'],
    flag: 'no-client-tasks',
    sets: false,
    group: 'Tasks',
    help: 'do not declare client-side tasks (sampling, elicitation) to the upstream for a client that lacks them',
  },
  {
    path: ['limits', 'maxLiveTasks'],
    flag: 'max-live-tasks',
    metavar: 'N',
    group: 'Limits per caller',
    help: 'live tasks per caller (identity, or session without one)',
  },
  {
    path: ['limits', 'taskCreationRate'],
    flag: 'task-creation-rate',
    metavar: 'N',
    group: 'Limits per caller',
    help: 'task-augmented calls per second per caller (a token bucket)',
  },
  {
    path: ['limits', 'taskCreationBurst'],
    flag: 'task-creation-burst',
    metavar: 'N',
    group: 'Limits per caller',
    help: '...with bursts up to this',
  },
  {
    path: ['limits', 'taskRequestRate'],
    flag: 'task-request-rate',
    metavar: 'N',
    group: 'Limits per caller',
    help: 'tasks/get, tasks/result, tasks/list and tasks/cancel per second per caller',
  },
  {
    path: ['limits', 'taskRequestBurst'],
    flag: 'task-request-burst',
    metavar: 'N',
    group: 'Limits per caller',
    help: '...with bursts up to this',
  },
  {
    path: ['store', 'url'],
    flag: 'store',
    metavar: 'URL',
    group: 'Task store',
    help:
      'keep tasks in this Redis (redis:// or rediss:// for TLS), shared by every replica, instead of in ' +
      'memory; a password in the URL shows in the process list: prefer TASKGATE_STORE_PASSWORD',
  },
  {
    path: ['store', 'keyPrefix'],
    flag: 'store-key-prefix',
    metavar: 'PREFIX',
    group: 'Task store',
    help: 'prefix of every Redis key and channel; replicas that share tasks share it',
  },
  {
    path: ['store', 'leaseTtl'],
    flag: 'store-lease-ttl',
    metavar: 'MS',
    group: 'Task store',
    help: 'a replica that stops renewing its lease for this long (it died) has its running tasks failed',
  },
  {
    path: ['store', 'cursorSecret'],
    flag: 'store-cursor-secret',
    metavar: 'SECRET',
    secret: true,
    group: 'Task store',
    help: 'signs tasks/list cursors; required with a Redis store, the same on every replica, 16 bytes or more',
  },
  {
    path: ['store', 'password'],
    flag: 'store-password',
    metavar: 'SECRET',
    secret: true,
    group: 'Task store',
    help: "the Redis password, instead of the URL's",
  },
  {
    path: ['unwrap', 'minPollInterval'],
    flag: 'unwrap-min-poll-interval',
    metavar: 'MS',
    group: 'Unwrap (clients without tasks)',
    help: "poll an upstream task no more often than this, whatever the upstream's pollInterval",
  },
  {
    path: ['unwrap', 'maxPollInterval'],
    flag: 'unwrap-max-poll-interval',
    metavar: 'MS',
    group: 'Unwrap (clients without tasks)',
    help: 'poll an upstream task at least this often',
  },
  {
    path: ['unwrap', 'keepAliveInterval'],
    flag: 'unwrap-keep-alive-interval',
    metavar: 'MS',
    group: 'Unwrap (clients without tasks)',
    help: 'progress sent to a waiting client that gave a progressToken; 0 is off',
  },
  {
    path: ['http', 'listen'],
    flag: 'listen',
    metavar: 'HOST:PORT',
    group: 'HTTP front',
    help: 'serve MCP over Streamable HTTP here instead of stdio (a bare PORT binds 127.0.0.1)',
  },
  {
    path: ['http', 'path'],
    flag: 'path',
    metavar: 'PATH',
    group: 'HTTP front',
    help: 'the MCP endpoint',
  },
  {
    path: ['http', 'maxSessions'],
    flag: 'max-sessions',
    metavar: 'N',
    group: 'HTTP front',
    help: 'client sessions at once; more are refused with 503',
  },
  {
    path: ['http', 'sessionIdleTimeout'],
    flag: 'session-idle-timeout',
    metavar: 'MS',
    group: 'HTTP front',
    help: 'end a session with no request and no open stream for this long',
  },
  {
    path: ['http', 'abandonedSessionTimeout'],
    flag: 'abandoned-session-timeout',
    metavar: 'MS',
    group: 'HTTP front',
    help: 'end a session with no open stream, no request in flight and no running task for this long',
  },
  {
    path: ['http', 'eventLogBytes'],
    flag: 'event-log-bytes',
    metavar: 'BYTES',
    group: 'HTTP front',
    help: 'SSE events a session keeps for replay (Last-Event-ID), in bytes; the oldest go first',
  },
  {
    path: ['http', 'eventLogTotalBytes'],
    flag: 'event-log-total-bytes',
    metavar: 'BYTES',
    group: 'HTTP front',
    help: 'SSE events all sessions keep for replay together, in bytes; the oldest anywhere go first',
  },
  {
    path: ['aggregate', 'slowServerGrace'],
    flag: 'slow-server-grace',
    metavar: 'MS',
    group: 'Several servers (upstreams)',
    help: 'initialize and the merged lists go on without the servers still silent this long after the first answer; a late one joins when it answers initialize',
  },
  {
    path: ['aggregate', 'listChangedWindow'],
    flag: 'list-changed-window',
    metavar: 'MS',
    group: 'Several servers (upstreams)',
    help: "the servers' list changes within this of the first reach the client as one list_changed",
  },
  {
    path: ['shutdownGrace'],
    flag: 'shutdown-grace',
    metavar: 'MS',
    group: 'Transport',
    help: 'on SIGTERM, how long running tasks may finish before they fail and taskgate exits',
  },
  {
    path: ['upstream', 'sharing'],
    flag: 'upstream-sharing',
    metavar: 'MODE',
    group: 'Transport',
    help: 'over HTTP, one stdio server per client session (session), one shared by all of them (shared), or a pool of them (pool)',
  },
  {
    path: ['upstream', 'poolSize'],
    flag: 'upstream-pool-size',
    metavar: 'N',
    group: 'Transport',
    help: 'with --upstream-sharing pool: how many servers the client sessions are spread over',
  },
  {
    path: ['upstream', 'era'],
    flag: 'upstream-era',
    metavar: 'MODE',
    group: 'Transport',
    help: 'which protocol generation to speak to the upstream: auto (ask it, and put each session on the face that suits it), legacy (2025) or modern (2026-07-28)',
  },
  {
    path: ['upstreamRestart', 'enabled'],
    flag: 'no-upstream-restart',
    sets: false,
    group: 'Transport',
    help: 'leave a crashed stdio upstream down instead of starting it again',
  },
  {
    path: ['upstreamRestart', 'delay'],
    flag: 'upstream-restart-delay',
    metavar: 'MS',
    group: 'Transport',
    help: 'wait before restarting a crashed stdio upstream; doubled for each crash in a row',
  },
  {
    path: ['upstreamRestart', 'maxDelay'],
    flag: 'upstream-restart-max-delay',
    metavar: 'MS',
    group: 'Transport',
    help: 'the longest wait between restarts of a stdio upstream that keeps crashing',
  },
  {
    path: ['upstreamRestart', 'holdRequests'],
    flag: 'upstream-restart-hold',
    metavar: 'MS',
    group: 'Transport',
    help: 'requests sent while a crashed stdio upstream restarts wait this long for it, then fail; 0 refuses them at once',
  },
  {
    path: ['maxMessageBytes'],
    flag: 'max-message-bytes',
    metavar: 'BYTES',
    group: 'Transport',
    help: 'largest JSON-RPC message accepted',
  },
  {
    path: ['telemetry', 'enabled'],
    flag: 'telemetry',
    sets: true,
    group: 'Output',
    help: 'export OpenTelemetry traces and metrics over OTLP/HTTP (on by itself when OTEL_EXPORTER_OTLP_ENDPOINT is set)',
  },
  {
    path: ['telemetry', 'endpoint'],
    flag: 'otlp-endpoint',
    metavar: 'URL',
    group: 'Output',
    help: 'the OTLP/HTTP traces URL (default http://localhost:4318/v1/traces)',
  },
  {
    path: ['admin', 'listen'],
    flag: 'admin-listen',
    metavar: 'HOST:PORT',
    group: 'Output',
    help: 'serve /metrics, /healthz and /dashboard here (a bare PORT binds 127.0.0.1); over HTTP they move off the front',
  },
  {
    path: ['logLevel'],
    flag: 'log-level',
    metavar: 'LEVEL',
    group: 'Output',
    help: 'logs always go to stderr',
  },
];

/** Metavars whose values are text; the others are numbers. */
export const TEXT_METAVARS: ReadonlySet<Setting['metavar']> = new Set([
  'LEVEL',
  'MODE',
  'HOST:PORT',
  'PATH',
  'URL',
  'PREFIX',
  'SECRET',
]);

/** The settings a flag can set (secrets cannot). */
export const FLAG_SETTINGS: readonly Setting[] = SETTINGS.filter((setting) => setting.secret !== true);

/** `TASKGATE_MAX_TTL` for `--max-ttl`, `TASKGATE_STATUS_NOTIFICATIONS` for `--no-status-notifications`. */
export function envName(setting: Setting): string {
  return `TASKGATE_${setting.flag.replace(/^no-/, '').toUpperCase().replace(/-/g, '_')}`;
}

export function schemaOf(setting: Setting): z.ZodType {
  const schema = schemaAt(setting.path);
  if (schema === undefined) throw new Error(`setting ${setting.path.join('.')} is not in the schema`);
  return schema;
}

/** An environment variable's text as the value it stands for: numbers and booleans by the schema. */
export function fromText(setting: Setting, text: string): unknown {
  const schema = unwrap(schemaOf(setting));
  if (schema instanceof z.ZodNumber && text.trim() !== '' && Number.isFinite(Number(text))) {
    return Number(text);
  }
  if (schema instanceof z.ZodBoolean) {
    if (['true', '1'].includes(text.toLowerCase())) return true;
    if (['false', '0'].includes(text.toLowerCase())) return false;
  }
  return text;
}

/** `<label>: expected ..., got ...` when the value does not fit the setting, else undefined. */
export function checkValue(setting: Setting, value: unknown, label: string): string | undefined {
  const schema = schemaOf(setting);
  const parsed = schema.safeParse(value, { reportInput: true });
  if (parsed.success) return undefined;
  const secret = setting.secret === true || isSecretName(setting.path.at(-1)!);
  const issue = parsed.error.issues[0];
  return `${label}: ${issue === undefined ? expectedGot(schema, value, secret) : whatIsWrong(schema, issue, secret)}`;
}

/** The value this setting has in an input, if it is set there. */
export function valueIn(input: ConfigInput, setting: Setting): unknown {
  let value: unknown = input;
  for (const part of setting.path) {
    if (typeof value !== 'object' || value === null) return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

/** Sets this setting in an input, making the section it lives in when needed. */
export function assign(input: Record<string, unknown>, setting: Setting, value: unknown): void {
  const [first, second] = setting.path;
  if (second === undefined) {
    input[first] = value;
    return;
  }
  const section = input[first];
  if (typeof section === 'object' && section !== null && !Array.isArray(section)) {
    (section as Record<string, unknown>)[second] = value;
  } else if (section === undefined) input[first] = { [second]: value };
  // Anything else in the section's place is the file's mistake, and the file's check reports it.
}
