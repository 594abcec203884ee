/**
 * Every setting of taskgate, in one schema: flags, environment and config file all end up here, and
 * nothing else decides a default.
 */
import { z } from 'zod';
import {
  MemberSchema,
  RESTART,
  RESTART_DELAYS,
  SERVER_NAME,
  TOOL_NAME_CHARACTERS,
  ToolRuleSchema,
  UpstreamSchema,
} from './server-schema.js';
import { DEFAULT_SEPARATOR, serverProblems } from './server-problems.js';
import { MAX_TIMER_MS, MIB, MS_PER_DAY, milliseconds } from './units.js';
import { LimitsSchema, type LimitsSettings } from './limits-schema.js';
import { IntrospectionSchema } from './oauth-introspection.js';
import { upstreamAuthProblems } from './upstream-auth-problems.js';

export { DEFAULT_SEPARATOR };
export {
  DEFAULT_REQUEST_TIMEOUT_MS,
  MemberSchema,
  SERVER_NAME,
  TASK_SUPPORT_VALUES,
  ToolRuleSchema,
  UpstreamSchema,
  UpstreamTokenRequestSchema,
  type Member,
  type TaskSupport,
  type ToolRule,
  type UpstreamTokenRequest,
} from './server-schema.js';

/** How `upstreams` waits on its servers, unless `aggregate` says otherwise (it is absent unless given). */
export const AGGREGATE_DEFAULTS = { slowServerGrace: 10_000, listChangedWindow: 100 } as const;

/** An address to listen on, of this shape, whose port (the digits it ends with) is one there can be. */
/** `PORT` or `HOST:PORT`, the host in brackets for IPv6. */
const LISTEN_SHAPE = /^((\[[0-9a-fA-F:]+\]|[^:]+):)?\d{1,5}$/;

const listenAddress = (shape: RegExp, expected: string) =>
  z
    .string()
    .regex(shape, expected)
    .superRefine((address, context) => {
      const port = Number(/\d+$/.exec(address)?.[0]);
      if (port > 65_535) {
        context.addIssue({
          code: 'custom',
          message: `port ${port} does not exist: expected a port from 0 to 65535 (0 picks a free one), got "${address}"`,
        });
      }
    });

/**
 * taskgate as an OAuth 2.1 resource server (MCP basic/authorization): JWT access tokens from `issuer`,
 * checked against its keys (JWKS), or opaque ones it introspects (`introspection`), for taskgate's own `resource` (RFC 8707: the `aud` must name it), with
 * the `scopes` every request needs. Protected Resource Metadata (RFC 9728) names the issuer to clients.
 */
const scopeToken = z.string().regex(/^[!#-[\]-~]+$/, 'expected a scope token');

export const OAuthSchema = z
  .object({
    /** The authorization server's issuer identifier; its metadata (RFC 8414, else OIDC discovery) gives the JWKS. */
    issuer: z.url({ protocol: /^https?$/ }),
    /** taskgate's own canonical URI as clients reach it (e.g. https://mcp.example.com/mcp): the audience. */
    resource: z.url({ protocol: /^https?$/ }).refine((url) => !url.includes('#'), 'expected no fragment'),
    /**
     * Scopes every request's token must carry (named in the 401/403 challenge and the metadata). Not
     * offline_access: refresh tokens are not a resource requirement (2026-07-28 "Refresh Tokens").
     */
    scopes: z
      .array(scopeToken)
      .refine(
        (scopes) => !scopes.includes('offline_access'),
        'offline_access is for refresh tokens, which no resource requires: leave it to clients to ask for',
      )
      .default([]),
    /** Scope hierarchies: a token carrying a key scope carries the scopes listed for it too (transitively). */
    impliedScopes: z.record(scopeToken, z.array(scopeToken)).default({}),
    /** The issuer's JWKS, when its metadata should not be asked for it. */
    jwksUri: z.url({ protocol: /^https?$/ }).optional(),
    /** Leeway for exp and nbf against clocks that differ a little. */
    clockSkew: z.number().int().nonnegative().max(300_000).default(30_000),
    /** After a key fetch, a token of an unknown `kid` fetches the keys again no sooner than this. */
    jwksCooldown: z.number().int().nonnegative().max(MAX_TIMER_MS).default(30_000),
    /** Keys are fetched again (on the next token) once this old: rotation without a kid miss. */
    jwksMaxAge: milliseconds(MAX_TIMER_MS).default(600_000),
    /** How long a request to the authorization server (metadata, keys, introspection) may take. */
    timeout: milliseconds(60_000).default(5_000),
    /** Opaque tokens (RFC 7662 introspection at the authorization server): oauth-introspection.ts. */
    introspection: IntrospectionSchema.optional(),
    /** `resource_name` in the metadata, for people. */
    resourceName: z.string().min(1).optional(),
    /**
     * Pass the caller's own validated token on to an HTTP upstream. Off: the MCP spec forbids token
     * passthrough (the confused deputy); only for an upstream that is trusted and checks the token itself.
     */
    bearerPassthrough: z.boolean().default(false),
  })
  .strict();
export type OAuthConfig = z.infer<typeof OAuthSchema>;

/** A tool-name glob, as in `tools[].match`. */
const toolGlob = z.string().min(1);

/**
 * One authorization rule (`auth.rules`): whom it is for (a caller it matches by subject, by a group or
 * role of its token, or by a scope of its token), and what it grants them. A right no matching rule
 * grants is not had; each rule grants the tools it allows less those it denies.
 */
export const AccessRuleSchema = z
  .object({
    /** Subjects (globs: `*` is every identified caller): a static token's subject, the header's, an OAuth `sub`. */
    subjects: z.array(z.string().min(1)).min(1).optional(),
    /** OAuth only: the token's `groups` or `roles` claim holds one of these. */
    groups: z.array(z.string().min(1)).min(1).optional(),
    /** OAuth only: the token carries one of these scopes. */
    scopes: z.array(z.string().min(1)).min(1).optional(),
    /** The tools (globs) they may call and see in tools/list: those of `allow` less those of `deny`. */
    tools: z
      .object({ allow: z.array(toolGlob).default([]), deny: z.array(toolGlob).default([]) })
      .strict()
      .optional(),
    /** `all`: they may read and cancel any caller's task (an operator); `own` unless set. */
    tasks: z.enum(['own', 'all']).optional(),
    /** They may use tasks/list (of their own tasks). */
    taskList: z.boolean().optional(),
    /** They may read /metrics on the front. */
    metrics: z.boolean().optional(),
    /** They may see /dashboard on the front. */
    dashboard: z.boolean().optional(),
  })
  .strict()
  .refine((rule) => [rule.subjects, rule.groups, rule.scopes].some((list) => list !== undefined), {
    message:
      "name whom the rule is for: subjects, groups or scopes (subjects: ['*'] for every identified caller)",
  });
export type AccessRule = z.infer<typeof AccessRuleSchema>;

/** Bytes a tasks/list cursor secret needs at least. */
export const MIN_CURSOR_SECRET_BYTES = 16;

export const StoreSchema = z
  .object({
    /** `redis://[[user]:password@]host[:port][/db]`, or `rediss://` for TLS; absent keeps tasks in memory. */
    url: z.url({ protocol: /^rediss?$/ }).optional(),
    /** Overrides the URL's password, so that the URL itself carries no secret. */
    password: z.string().min(1).optional(),
    /** Prefix of every key and of the pub/sub channel: the replicas that share tasks share it. */
    keyPrefix: z.string().min(1).default('taskgate:'),
    /** Signs tasks/list cursors; every replica must be given the same one (required with `url`, below). */
    cursorSecret: z.string().optional(),
    /** The executor lease: a replica that stops renewing it for this long loses its running tasks. */
    leaseTtl: z.number().int().min(100).max(MAX_TIMER_MS).default(15_000),
    /** How long one Redis command may take before it fails, and Redis counts as stalled (a hung server). */
    commandTimeout: milliseconds(MAX_TIMER_MS).default(10_000),
  })
  .strict()
  .superRefine(({ cursorSecret }, context) => {
    // The secret is not shown: it may be a real one, only too short.
    if (cursorSecret !== undefined && Buffer.byteLength(cursorSecret) < MIN_CURSOR_SECRET_BYTES) {
      context.addIssue({
        code: 'custom',
        path: ['cursorSecret'],
        message: `expected at least ${MIN_CURSOR_SECRET_BYTES} bytes, got ${Buffer.byteLength(cursorSecret)} (e.g. openssl rand -hex 32)`,
      });
    }
  })
  .prefault({});

export const ConfigSchema = z
  .object({
    upstream: UpstreamSchema.optional(),
    /**
     * Several servers behind one endpoint (not with `upstream`): by name, each a command or a URL, their
     * tools and prompts merged under prefixed names (src/aggregate/).
     */
    upstreams: z
      .record(
        z.string().regex(SERVER_NAME, 'a server name has 1 to 64 letters, digits, "_" or "-"'),
        MemberSchema,
      )
      .optional(),
    namespacing: z
      .object({
        /** Between a server's name and its tool's, prompt's or task's (`everything__echo`). */
        separator: z
          .string()
          .min(1)
          .max(4)
          .regex(TOOL_NAME_CHARACTERS, 'a tool name allows only letters, digits, "_", "-" and "."')
          .default(DEFAULT_SEPARATOR),
      })
      .strict()
      // Absent unless given: the one-server config stays as it was.
      .optional(),
    /** With `upstreams`: how long the servers get, and how their list changes are told. */
    aggregate: z
      .object({
        /**
         * A request asked of every server (initialize, a merged list) goes on without those still silent
         * this long after the first answer; one that answers initialize later joins then.
         */
        slowServerGrace: z
          .number()
          .int()
          .nonnegative()
          .max(MAX_TIMER_MS)
          .default(AGGREGATE_DEFAULTS.slowServerGrace),
        /** The servers' list changes within this of the first reach the client as one list_changed. */
        listChangedWindow: z
          .number()
          .int()
          .nonnegative()
          .max(MAX_TIMER_MS)
          .default(AGGREGATE_DEFAULTS.listChangedWindow),
      })
      .strict()
      // Absent unless given, as namespacing.
      .optional(),
    /** The Streamable HTTP front; without `listen`, taskgate speaks stdio to the client that started it. */
    http: z
      .object({
        /** PORT (on 127.0.0.1) or HOST:PORT to listen on, e.g. 8080 or 0.0.0.0:8080 ([::1]:8080 for IPv6). */
        listen: listenAddress(LISTEN_SHAPE, 'expected PORT or HOST:PORT').optional(),
        path: z.string().startsWith('/').default('/mcp'),
        /** Origins allowed to call the front from a browser; loopback origins are always allowed. */
        allowedOrigins: z.array(z.string()).default([]),
        maxSessions: z.number().int().positive().default(100),
        /** A session with no request and no open stream for this long is ended. */
        sessionIdleTimeout: milliseconds(MAX_TIMER_MS).default(1_800_000),
        /**
         * A session with no open stream, no request in flight and no running task for this long is ended:
         * its client left without DELETE.
         */
        abandonedSessionTimeout: milliseconds(MAX_TIMER_MS).default(60_000),
        /** SSE events kept per session for resumption (Last-Event-ID). */
        eventLogSize: z.number().int().positive().max(100_000).default(1_000),
        /**
         * Bytes of those events kept per session (and, apart, of messages queued for a GET stream not yet
         * open): past it the oldest are dropped.
         */
        eventLogBytes: z
          .number()
          .int()
          .positive()
          .default(16 * MIB),
        /** Bytes of events kept by all sessions together: past it the oldest anywhere are dropped. */
        eventLogTotalBytes: z
          .number()
          .int()
          .positive()
          .default(256 * MIB),
      })
      .strict()
      .prefault({}),
    /** The admin listener for /metrics, /healthz and /dashboard: PORT (on 127.0.0.1) or HOST:PORT. */
    admin: z
      .object({
        listen: listenAddress(LISTEN_SHAPE, 'expected PORT or HOST:PORT').optional(),
      })
      .strict()
      .prefault({}),
    /**
     * OpenTelemetry traces and metrics, off unless turned on here or by OTEL_EXPORTER_OTLP_ENDPOINT /
     * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT / OTEL_EXPORTER_OTLP_METRICS_ENDPOINT; the rest of the OTEL_*
     * environment applies as in every OTel SDK.
     */
    telemetry: z
      .object({
        enabled: z.boolean().optional(),
        /** The OTLP/HTTP traces URL (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT wins over it). */
        endpoint: z.url({ protocol: /^https?$/ }).optional(),
        /**
         * The OTLP/HTTP metrics URL (OTEL_EXPORTER_OTLP_METRICS_ENDPOINT wins over it); by default the
         * traces URL with /v1/metrics for /v1/traces.
         */
        metricsEndpoint: z.url({ protocol: /^https?$/ }).optional(),
        protocol: z.enum(['http/protobuf', 'http/json']).optional(),
        serviceName: z.string().min(1).optional(),
        /**
         * The conventions' opt-in `gen_ai.tool.call.arguments` and `gen_ai.tool.call.result` on the
         * tools/call spans: what callers send and get, so off by default.
         */
        toolContent: z.boolean().default(false),
      })
      .strict()
      .prefault({}),
    /** On SIGTERM/SIGINT, how long running tasks may finish before they are failed and taskgate exits. */
    shutdownGrace: z.number().int().nonnegative().max(MAX_TIMER_MS).default(30_000),
    logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    /** Largest single JSON-RPC message taskgate accepts on any connection. */
    maxMessageBytes: z
      .number()
      .int()
      .min(64 * 1024)
      .max(1024 * MIB)
      .default(32 * MIB),
    tasks: z
      .object({
        defaultTtl: milliseconds(30 * MS_PER_DAY).default(3_600_000),
        maxTtl: milliseconds(30 * MS_PER_DAY).default(MS_PER_DAY),
        pollInterval: milliseconds(MS_PER_DAY).default(1_000),
        /**
         * For 2026-07-28 clients with the tasks extension, where the server decides: a call of an `optional`
         * tool is answered plainly if it ends within this time, and becomes a task only after it (0: every
         * such call is a task at once). `required` tools are always tasks.
         */
        promoteAfter: z.number().int().nonnegative().max(MAX_TIMER_MS).default(0),
        maxTasks: z.number().int().positive().default(10_000),
        maxResultBytes: z
          .number()
          .int()
          .positive()
          .default(256 * MIB),
        statusNotifications: z.boolean().default(true),
        /**
         * Serve and advertise tasks/list although tasks are not bound to an identity: anyone on the
         * connection can then list every task of that connection. Its default depends on the front.
         */
        exposeList: z.boolean().optional(),
        listPageSize: z.number().int().positive().max(1000).default(100),
      })
      .strict()
      .prefault({}),
    /**
     * Where tasks live: in this process (the default), or in one Redis shared by several replicas, so that
     * any replica serves any task and finished results survive a restart.
     */
    store: StoreSchema,
    /** How taskgate drives an upstream task for a client that has no tasks of its own. */
    unwrap: z
      .object({
        /** The upstream's pollInterval is honoured, but never below this... */
        minPollInterval: milliseconds(MS_PER_DAY).default(50),
        /** ...nor above this. */
        maxPollInterval: milliseconds(MS_PER_DAY).default(5_000),
        /** Progress sent to a client that gave a progressToken while its unwrapped call runs; 0 is off. */
        keepAliveInterval: z.number().int().nonnegative().max(MS_PER_DAY).default(15_000),
      })
      .strict()
      .prefault({}),
    /** Who the caller is, on the HTTP front (stdio has no identity). Tasks are bound to it. */
    auth: z
      .object({
        /** Static bearer tokens and the subject each stands for. */
        tokens: z
          .array(z.object({ token: z.string().min(16), subject: z.string().min(1) }).strict())
          .default([]),
        /** An identity header set by an auth proxy in front, believed only from these addresses. */
        trustedHeader: z
          .object({ name: z.string().min(1), trustedAddresses: z.array(z.string()).min(1) })
          .strict()
          .optional(),
        /**
         * The client's own bearer token, passed on to an HTTP upstream; tasks are bound to a keyed hash
         * of it (the key is this secret).
         */
        bearerPassthrough: z
          .object({ secret: z.string().min(16) })
          .strict()
          .optional(),
        /**
         * The subjects (of `tokens` or `trustedHeader`) who may read /metrics and /dashboard on the front;
         * other callers get 403. Without any, those pages are served on the admin listener only.
         */
        adminSubjects: z.array(z.string().min(1)).default([]),
        /** Or: callers present OAuth access tokens, which taskgate validates as a resource server. */
        oauth: OAuthSchema.optional(),
        /**
         * Who may call which tools, read others' tasks, list tasks, see /metrics and /dashboard. None:
         * every caller may do all of it (its own tasks only, the pages as adminSubjects says).
         */
        rules: z.array(AccessRuleSchema).default([]),
      })
      .strict()
      .refine(
        (auth) =>
          [
            auth.tokens.length > 0,
            auth.trustedHeader !== undefined,
            auth.bearerPassthrough !== undefined,
            auth.oauth !== undefined,
          ].filter(Boolean).length <= 1,
        { message: 'choose one way to identify callers: tokens, trustedHeader, bearerPassthrough or oauth' },
      )
      .prefault({}),
    /**
     * Per caller (an identity, or a session without one), so that one caller cannot starve the others.
     * No default here: it depends on the front (FRONT_DEFAULTS).
     */
    limits: LimitsSchema.prefault({}),
    audit: z
      .object({
        /** One log line (logger "audit", on stderr) per task created, changed, read, cancelled, refused. */
        enabled: z.boolean().default(true),
        /** Also log tool arguments; never on unless the operator accepts them in the logs. */
        logArguments: z.boolean().default(false),
      })
      .strict()
      .prefault({}),
    /**
     * Declare client-side tasks (task-augmented sampling and elicitation) to the upstream on behalf of a
     * client that lacks them, and serve those tasks here.
     */
    clientTasks: z.boolean().default(true),
    /**
     * A stdio upstream that exits once past its handshake is started again after `delay`, doubled for
     * each crash in a row up to `maxDelay`, and given the client's handshake again. (An HTTP upstream needs
     * none of this: each request connects anew.)
     */
    upstreamRestart: RESTART.prefault({}).refine(...RESTART_DELAYS),
    tools: z.array(ToolRuleSchema).default([]),
  })
  .strict();

/**
 * Defaults that depend on the front. Over stdio the one client is the process that started taskgate: its
 * connection is the binding context (tasks/list is served, as the SDK's own task servers do), and no
 * per-caller limit applies unless one is set. The HTTP front is shared: without an identity tasks/list stays
 * off, and the limits are there against abuse, not as a throttle: one well-behaved client's burst of 1 000
 * task calls, polled at the default pollInterval, is never refused.
 */
export const FRONT_DEFAULTS = {
  stdio: { tasks: { exposeList: true }, limits: {} },
  http: {
    tasks: { exposeList: false },
    limits: {
      maxLiveTasks: 1_000,
      taskCreationRate: 100,
      taskCreationBurst: 1_000,
      taskRequestRate: 1_000,
      taskRequestBurst: 2_000,
    },
  },
} as const;

type Front = keyof typeof FRONT_DEFAULTS;
type ParsedConfig = z.infer<typeof ConfigSchema>;

/** A rate and its burst are one token bucket: set either one, and the other keeps its HTTP-front default. */
const BUCKETS = [
  ['taskCreationRate', 'taskCreationBurst'],
  ['taskRequestRate', 'taskRequestBurst'],
] as const;

function withFrontDefaults(config: ParsedConfig): ParsedConfig & { tasks: { exposeList: boolean } } {
  const front: Front = config.http.listen === undefined ? 'stdio' : 'http';
  const defaults = FRONT_DEFAULTS[front];
  return {
    ...config,
    tasks: { ...config.tasks, exposeList: config.tasks.exposeList ?? defaults.tasks.exposeList },
    limits: withBuckets({ ...defaults.limits, ...config.limits }),
  };
}

/** The limits with each bucket whole: the rate or burst not set of one that is set keeps its HTTP-front default. */
export function withBuckets(given: LimitsSettings): LimitsSettings {
  const limits = { ...given };
  for (const pair of BUCKETS) {
    if (pair.some((key) => limits[key] !== undefined)) {
      for (const key of pair) limits[key] ??= FRONT_DEFAULTS.http.limits[key];
    }
  }
  return limits;
}

/**
 * The effective configuration: ConfigSchema, plus the requirements that only all sources together can
 * meet, and the defaults of its front. A config file is checked with ConfigSchema alone (every value in it
 * must be good), since such a requirement is often met elsewhere: the cursor secret of a Redis store
 * belongs in the environment.
 */
export const EffectiveConfigSchema = ConfigSchema.superRefine((config, context) => {
  const { store, auth, upstream } = config;
  for (const issue of serverProblems(config)) context.addIssue({ code: 'custom', ...issue });
  if (store.url !== undefined && store.cursorSecret === undefined) {
    context.addIssue({
      code: 'custom',
      path: ['store', 'cursorSecret'],
      message: `required with store.url: tasks/list cursors are signed with it, so every replica needs the same secret of at least ${MIN_CURSOR_SECRET_BYTES} bytes (e.g. TASKGATE_STORE_CURSOR_SECRET=$(openssl rand -hex 32))`,
    });
  }
  for (const issue of accessRuleProblems(auth)) context.addIssue({ code: 'custom', ...issue });
  for (const issue of upstreamAuthProblems(auth, upstream)) context.addIssue({ code: 'custom', ...issue });
  for (const [name, server] of Object.entries(config.upstreams ?? {})) {
    for (const { path, message } of upstreamAuthProblems(auth, server)) {
      context.addIssue({ code: 'custom', path: ['upstreams', name, ...path.slice(1)], message });
    }
  }
}).transform(withFrontDefaults);

/** Rules that can match nobody: callers not identified at all, or groups and scopes without OAuth tokens. */
function accessRuleProblems(auth: ParsedConfig['auth']): { path: (string | number)[]; message: string }[] {
  if (auth.rules.length === 0) return [];
  const identified =
    auth.tokens.length > 0 ||
    auth.trustedHeader !== undefined ||
    auth.bearerPassthrough !== undefined ||
    auth.oauth !== undefined;
  if (!identified) {
    return [
      {
        path: ['auth', 'rules'],
        message:
          'rules need callers to be identified: configure tokens, trustedHeader, bearerPassthrough or oauth',
      },
    ];
  }
  if (auth.oauth !== undefined) return [];
  return auth.rules.flatMap((rule, index) =>
    (['groups', 'scopes'] as const)
      .filter((key) => rule[key] !== undefined)
      .map((key) => ({
        path: ['auth', 'rules', index, key],
        message: `${key} come from OAuth access tokens: this rule can match nobody without auth.oauth (use subjects)`,
      })),
  );
}

export type Config = z.output<typeof EffectiveConfigSchema>;
export type ConfigInput = z.input<typeof ConfigSchema>;
