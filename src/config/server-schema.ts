/**
 * The schemas of a server taskgate fronts: `upstream` (the one server), each entry of `upstreams` (several,
 * src/aggregate/), their credentials and restart policy, and the per-tool rules both take.
 */
import { z } from 'zod';
import { LimitsSchema } from './limits-schema.js';
import { MAX_TIMER_MS, MS_PER_DAY, milliseconds } from './units.js';

/** upstream.requestTimeout unless set: generous, since long work belongs in a task. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 300_000;

/**
 * `passthrough` leaves the tool exactly as the upstream lists it: taskgate neither marks it nor runs it
 * as a task (a task-augmented call of it is refused like a `forbidden` one unless the upstream runs it
 * as a task itself).
 */
export const TASK_SUPPORT_VALUES = ['required', 'optional', 'forbidden', 'passthrough'] as const;
export type TaskSupport = (typeof TASK_SUPPORT_VALUES)[number];

export const ToolRuleSchema = z
  .object({
    /** Tool-name glob: `*` matches any run of characters, `?` one character. */
    match: z.string().min(1),
    taskSupport: z.enum(TASK_SUPPORT_VALUES).optional(),
    ttl: milliseconds(30 * MS_PER_DAY).optional(),
    maxTtl: milliseconds(30 * MS_PER_DAY).optional(),
    pollInterval: milliseconds(MS_PER_DAY).optional(),
    immediateResponse: z.string().optional(),
    /** A task of this tool running longer fails with a statusMessage that says so; its call is cancelled. */
    timeout: milliseconds(MAX_TIMER_MS).optional(),
    /** For clients without tasks: run the tool upstream as a task even where the upstream only offers it. */
    unwrap: z.boolean().optional(),
    /** For 2026-07-28 clients with the tasks extension: see `tasks.promoteAfter`. */
    promoteAfter: z.number().int().nonnegative().max(MAX_TIMER_MS).optional(),
  })
  .strict();
export type ToolRule = z.infer<typeof ToolRuleSchema>;

/**
 * A token request taskgate makes as an OAuth client of the upstream's authorization server
 * (`upstream.auth`), authenticated with its own client id and secret (client_secret_basic).
 */
export const UpstreamTokenRequestSchema = z
  .object({
    /** The authorization server's token endpoint. */
    tokenEndpoint: z.url({ protocol: /^https?$/ }),
    clientId: z.string().min(1),
    clientSecret: z.string().min(1),
    /** Space-separated scopes asked for. */
    scope: z.string().min(1).optional(),
    /** The `resource` asked for (RFC 8707): the upstream's URL unless set. */
    resource: z.url({ protocol: /^https?$/ }).optional(),
    /** An `audience` (RFC 8693 section 2.1), for servers that name the upstream so. */
    audience: z.string().min(1).optional(),
    /** A token is replaced this long before it expires (at most half its lifetime before). */
    refreshBefore: z.number().int().nonnegative().max(MAX_TIMER_MS).default(60_000),
    /** How long a token request may take. */
    timeout: milliseconds(60_000).default(5_000),
  })
  .strict();
export type UpstreamTokenRequest = z.infer<typeof UpstreamTokenRequestSchema>;

/**
 * What an HTTP upstream is sent as its Authorization, in place of the caller's token (which MCP forbids
 * passing through): a token of taskgate's own (client credentials), or one the caller's token is exchanged
 * for (RFC 8693), whose audience is the upstream. A fixed credential is `headers`.
 */
const UpstreamAuthSchema = z
  .object({
    clientCredentials: UpstreamTokenRequestSchema.optional(),
    tokenExchange: UpstreamTokenRequestSchema.optional(),
  })
  .strict()
  .refine((auth) => (auth.clientCredentials === undefined) !== (auth.tokenExchange === undefined), {
    message: 'give exactly one of clientCredentials or tokenExchange',
  });

type WithAuth = {
  url?: string | undefined;
  headers?: Record<string, string> | undefined;
  auth?: object | undefined;
};

/** `auth`, of `upstream` or of a server of `upstreams`, is for an HTTP server. */
const AUTH_OVER_HTTP: [(server: WithAuth) => boolean, { message: string; path: PropertyKey[] }] = [
  (server) => server.auth === undefined || server.url !== undefined,
  {
    message: 'auth is for an HTTP upstream (url); a stdio server gets its credential in env',
    path: ['auth'],
  },
];
const AUTH_NOT_IN_HEADERS: [(server: WithAuth) => boolean, { message: string; path: PropertyKey[] }] = [
  (server) =>
    server.auth === undefined ||
    !Object.keys(server.headers ?? {}).some((name) => name.toLowerCase() === 'authorization'),
  { message: 'auth sets the Authorization header: leave it out of headers', path: ['auth'] },
];

/** The settings of one upstream server, shared by `upstream` and each entry of `upstreams`. */
const SERVER_SHAPE = {
  command: z.string().min(1).optional(),
  args: z.array(z.string()).default([]),
  env: z.record(z.string(), z.string()).optional(),
  cwd: z.string().optional(),
  url: z.url({ protocol: /^https?$/ }).optional(),
  /** Sent with every request to an HTTP upstream (e.g. an API key): a fixed credential. */
  headers: z.record(z.string(), z.string()).optional(),
  /**
   * A request the upstream (stdio or HTTP) has not answered this long after it was sent fails with a
   * clear error (5 min unless set); progress does not extend it. A task's own call is bounded by its ttl.
   */
  requestTimeout: milliseconds(MAX_TIMER_MS).optional(),
  /**
   * HTTP upstream: how long a resumed response stream (GET with Last-Event-ID) may bring nothing for its
   * request before taskgate gives up on it: a request that only reads is sent again, others fail
   * (5 s unless set).
   */
  resumeTimeout: milliseconds(MAX_TIMER_MS).optional(),
  /**
   * Which protocol generation taskgate speaks to a stdio upstream: `auto` asks with `server/discover`
   * before anything else and speaks 2026-07-28 to a server that answers it, 2025 to any other (`auto`
   * unless set).
   */
  era: z.enum(['auto', 'legacy', 'modern']).optional(),
};

const ONE_SERVER = {
  message: 'give exactly one of command (a stdio server) or url (a Streamable HTTP server)',
};
const namesOneServer = (server: { command?: string | undefined; url?: string | undefined }): boolean =>
  (server.command === undefined) !== (server.url === undefined);

/** How a stdio server that exits is restarted (`upstreamRestart`, and a server's own `restart`). */
export const RESTART = z
  .object({
    enabled: z.boolean().default(true),
    delay: milliseconds(MAX_TIMER_MS).default(500),
    maxDelay: milliseconds(MAX_TIMER_MS).default(30_000),
    /**
     * While a crashed upstream is being restarted, requests wait this long for it (then fail with
     * -32000); 0 refuses them at once.
     */
    holdRequests: z.number().int().nonnegative().max(MAX_TIMER_MS).default(10_000),
  })
  .strict();
export const RESTART_DELAYS: [
  (restart: z.output<typeof RESTART>) => boolean,
  { message: string; path: PropertyKey[] },
] = [
  (restart) => restart.delay <= restart.maxDelay,
  { message: 'delay (500 ms unless set) must not be longer than maxDelay', path: ['delay'] },
];

/** How the HTTP front's client sessions get a server: `upstream`'s, and each server's of `upstreams`. */
const SHARING = {
  /**
   * Over the HTTP front, whether each 2025 client session gets a server of its own (`session`), all
   * share one connection to it (`shared`, see src/transport/shared-upstream.ts), or they are spread over
   * `poolSize` shared connections (`pool`, src/transport/upstream-pool.ts). Nothing changes over stdio,
   * which has one client.
   */
  sharing: z.enum(['session', 'shared', 'pool']).default('session'),
  /** With `sharing: pool`, the server processes (or HTTP server sessions) the client sessions share. */
  poolSize: z.number().int().min(1).max(256).default(4),
};

/** The upstream MCP server: a command taskgate starts on stdio, or the URL of a Streamable HTTP server. */
export const UpstreamSchema = z
  .object({
    ...SERVER_SHAPE,
    /** HTTP upstream: an OAuth token got for it (client credentials, or token exchange of the caller's). */
    auth: UpstreamAuthSchema.optional(),
    ...SHARING,
  })
  .strict()
  .refine(namesOneServer, ONE_SERVER)
  .refine(...AUTH_OVER_HTTP)
  .refine(...AUTH_NOT_IN_HEADERS);

/**
 * A server's name in `upstreams`: what its tools, prompts and task ids are prefixed with. The characters
 * are those the 2026-07-28 tool-name rules allow (server/tools.mdx "Tool Names") less the dot, which some
 * clients refuse in a function name.
 */
export const SERVER_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** Tool-name globs of one server of `upstreams`, as in `tools[].match`, for its include/exclude lists. */
const toolGlobs = z.array(z.string().min(1)).optional();

/** One server of `upstreams`: an upstream of its own, and how its names appear in the merged lists. */
export const MemberSchema = z
  .object({
    ...SERVER_SHAPE,
    /**
     * Its tools and prompts appear as `{name}{separator}{tool}` and its resource URIs as
     * `taskgate:{name}/{uri}` (true, the default), or as they are (false: mounted without prefix; a name
     * another server also lists is then an error naming both).
     */
    prefix: z.boolean().default(true),
    /** Only the tools matching one of these globs (by the server's own names) are listed and callable. */
    include: toolGlobs,
    /** The tools matching one of these globs are neither listed nor callable. */
    exclude: toolGlobs,
    /** Task policy rules for this server's tools (its own names), before the top-level `tools`. */
    tools: z.array(ToolRuleSchema).default([]),
    /** Its own restart policy, in place of `upstreamRestart` (whose defaults fill what it leaves out). */
    restart: RESTART.refine(...RESTART_DELAYS).optional(),
    /**
     * Per-caller limits of its own, over the top-level `limits`, counted for the calls to it alone: at its
     * limit, a caller is refused by this server only. Without them it shares the top-level ones.
     */
    limits: LimitsSchema.optional(),
    /** An HTTP server: an OAuth token got for it, as `upstream.auth` gets one for the one server. */
    auth: UpstreamAuthSchema.optional(),
    /** Over the HTTP front, shared by the sessions (or a pool of it) as `upstream.sharing` is. */
    ...SHARING,
  })
  .strict()
  .refine(namesOneServer, ONE_SERVER)
  .refine(...AUTH_OVER_HTTP)
  .refine(...AUTH_NOT_IN_HEADERS);
export type Member = z.output<typeof MemberSchema>;

/** The characters a tool name may have (server/tools.mdx "Tool Names", 2026-07-28). */
export const TOOL_NAME_CHARACTERS = /^[A-Za-z0-9_.-]+$/;
