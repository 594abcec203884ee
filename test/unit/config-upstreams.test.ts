/**
 * Several servers in the config (issue 32): the `upstreams` map of a config file, and `--servers FILE`
 * reading a desktop client's `{"mcpServers": ...}` JSON as it writes it; each mistake refused at start
 * with a problem that names it. The one-server config is untouched: `upstream`, `-- command` and
 * `--upstream-url` load as before.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { UsageError, parseCommandLine } from '../../src/config/flags.js';
import { loadConfig, type Loaded } from '../../src/config/load.js';
import { problemsOf as refusedWith } from '../helpers/config-problems.js';
import { thrownBy } from '../helpers/thrown.js';

const dir = mkdtempSync(join(tmpdir(), 'taskgate-upstreams-'));
let files = 0;
const file = (text: string, extension = 'yaml'): string => {
  const path = join(dir, `config-${++files}.${extension}`);
  writeFileSync(path, text);
  return path;
};
const FALLBACK = { command: 'node', args: ['example.js'] };
const load = (argv: string[]): Loaded => loadConfig(parseCommandLine(argv), {}, FALLBACK);
const problemsOf = (argv: string[]): string[] => refusedWith(() => load(argv));

const THREE = `
upstreams:
  files:
    command: npx
    args: [-y, "@modelcontextprotocol/server-filesystem", /tmp]
    era: legacy
    include: ["read_*", "list_*"]
  search:
    url: https://search.example/mcp
    headers: { Authorization: "Bearer x" }
    prefix: false
  slow:
    command: node
    args: [slow.js]
    env: { MODE: fast }
    cwd: /tmp
    tools:
      - { match: "report*", taskSupport: required }
namespacing:
  separator: "."
`;

describe('upstreams in a config file', () => {
  it('loads each server with its own era, prefix, filters and task rules, and no example server', () => {
    const { config } = load(['--config', file(THREE)]);
    expect(config.upstream).toBeUndefined();
    expect(Object.keys(config.upstreams ?? {})).toEqual(['files', 'search', 'slow']);
    expect(config.upstreams?.files).toMatchObject({
      command: 'npx',
      era: 'legacy',
      prefix: true,
      include: ['read_*', 'list_*'],
    });
    expect(config.upstreams?.search).toMatchObject({ url: 'https://search.example/mcp', prefix: false });
    expect(config.upstreams?.slow?.tools).toEqual([{ match: 'report*', taskSupport: 'required' }]);
    expect(config.namespacing?.separator).toBe('.');
  });

  it('takes a restart policy per server, in place of upstreamRestart', async () => {
    const { memberConfig } = await import('../../src/aggregate/members.js');
    const path = file(
      'upstreams:\n  a: { command: a, restart: { enabled: false } }\n  b: { command: b }\nupstreamRestart: { delay: 700 }\n',
    );
    const { config } = load(['--config', path]);
    expect(memberConfig(config, config.upstreams!.a!).upstreamRestart).toMatchObject({
      enabled: false,
      delay: 500,
    });
    expect(memberConfig(config, config.upstreams!.b!).upstreamRestart).toMatchObject({
      enabled: true,
      delay: 700,
    });
    const bad = file('upstreams:\n  a: { command: a, restart: { delay: 900, maxDelay: 800 } }\n');
    expect(problemsOf(['--config', bad]).join('\n')).toMatch(
      /upstreams\.a\.restart\.delay: delay .* must not be longer than maxDelay/,
    );
  });

  it('defaults the separator to "__", which the 2026-07-28 tool-name rules allow', () => {
    const { config } = load(['--config', file('upstreams:\n  a: { command: a }\n  b: { command: b }\n')]);
    expect(config.namespacing).toBeUndefined();
    expect(
      load(['--config', file('upstreams:\n  a: { command: a }\nnamespacing: {}\n')]).config.namespacing
        ?.separator,
    ).toBe('__');
  });

  it('takes the slow-server grace and the list_changed window from the file, a flag or a variable', () => {
    const servers = file('upstreams:\n  a: { command: a }\naggregate: { slowServerGrace: 250 }\n');
    expect(load(['--config', servers]).config.aggregate).toEqual({
      slowServerGrace: 250,
      listChangedWindow: 100,
    });
    expect(load(['--config', servers, '--list-changed-window', '0']).config.aggregate).toEqual({
      slowServerGrace: 250,
      listChangedWindow: 0,
    });
    const fromEnv = loadConfig(parseCommandLine(['--config', servers]), { TASKGATE_SLOW_SERVER_GRACE: '40' });
    expect(fromEnv.config.aggregate?.slowServerGrace).toBe(40);
    // Absent unless given, as namespacing: the defaults are the schema's.
    expect(load(['--config', file('upstreams:\n  a: { command: a }\n')]).config.aggregate).toBeUndefined();
    expect(problemsOf(['--config', servers, '--slow-server-grace', '-1']).join('\n')).toMatch(
      /slow-server-grace/,
    );
  });

  it('refuses a server that names both a command and a url, or neither', () => {
    const problems = problemsOf([
      '--config',
      file('upstreams:\n  a: { command: a, url: "http://x/mcp" }\n  b: { args: [x] }\n'),
    ]);
    expect(problems).toHaveLength(2);
    expect(problems.join('\n')).toMatch(/upstreams\.a.*exactly one of command/);
    expect(problems.join('\n')).toMatch(/upstreams\.b.*exactly one of command/);
  });

  it('takes auth and limits per server, and refuses auth a server cannot use, naming the server', () => {
    const grant = '{ tokenEndpoint: "https://as.example/token", clientId: gw, clientSecret: s }';
    const { config } = load([
      '--config',
      file(
        `upstreams:\n  a: { url: "https://a.example/mcp", auth: { clientCredentials: ${grant} } }\n` +
          '  b: { command: b, limits: { maxLiveTasks: 3 } }\n',
      ),
    ]);
    expect(config.upstreams?.a?.auth?.clientCredentials?.clientId).toBe('gw');
    expect(config.upstreams?.b?.limits).toEqual({ maxLiveTasks: 3 });
    const problems = problemsOf([
      '--config',
      file(
        `upstreams:\n  a: { command: a, auth: { clientCredentials: ${grant} } }\n` +
          `  c: { url: "https://c.example/mcp", headers: { Authorization: x }, auth: { clientCredentials: ${grant} } }\n`,
      ),
    ]).join('\n');
    expect(problems).toMatch(/upstreams\.a\.auth.*auth is for an HTTP upstream/);
    expect(problems).toMatch(/upstreams\.c\.auth.*leave it out of headers/);
    const exchange = file(
      `upstreams:\n  b: { url: "https://b.example/mcp", auth: { tokenExchange: ${grant} } }\n`,
    );
    expect(problemsOf(['--config', exchange]).join('\n')).toMatch(
      /upstreams\.b\.auth\.tokenExchange.*needs auth\.oauth/,
    );
  });

  it('takes sharing per server, session unless set, and refuses a token exchange on a shared one', () => {
    const { config } = load([
      '--config',
      file('upstreams:\n  a: { command: a, sharing: pool, poolSize: 2 }\n  b: { command: b }\n'),
    ]);
    expect(config.upstreams?.a).toMatchObject({ sharing: 'pool', poolSize: 2 });
    expect(config.upstreams?.b?.sharing).toBe('session');
    expect(
      problemsOf(['--config', file('upstreams:\n  a: { command: a, sharing: all }\n')]).join('\n'),
    ).toMatch(/upstreams\.a\.sharing/);
    const grant = '{ tokenEndpoint: "https://as.example/token", clientId: gw, clientSecret: s }';
    const exchange = file(
      'auth: { oauth: { issuer: "https://as.example", resource: "https://gw.example/mcp" } }\n' +
        `upstreams:\n  b: { url: "https://b.example/mcp", sharing: shared, auth: { tokenExchange: ${grant} } }\n`,
    );
    expect(problemsOf(['--config', exchange]).join('\n')).toMatch(
      /upstreams\.b\.auth\.tokenExchange.*needs upstream\.sharing: session \(a shared upstream/,
    );
  });

  it('refuses a server name a prefix cannot carry, and one that holds the separator', () => {
    expect(problemsOf(['--config', file('upstreams:\n  "my files": { command: a }\n')]).join('\n')).toMatch(
      /server name has 1 to 64 letters/,
    );
    expect(problemsOf(['--config', file('upstreams:\n  my__files: { command: a }\n')]).join('\n')).toMatch(
      /"my__files" contains the separator "__"/,
    );
  });

  it('refuses a separator the tool-name rules do not allow', () => {
    expect(
      problemsOf([
        '--config',
        file('upstreams:\n  a: { command: a }\nnamespacing: { separator: "/" }\n'),
      ]).join('\n'),
    ).toMatch(/namespacing\.separator/);
  });

  it('refuses upstreams beside one upstream, from the file or the command line', () => {
    const both = file('upstream: { command: one }\nupstreams:\n  a: { command: a }\n');
    expect(problemsOf(['--config', both]).join('\n')).toMatch(/give the servers once/);
    const several = file('upstreams:\n  a: { command: a }\n');
    expect(problemsOf(['--config', several, '--', 'node', 'x.js']).join('\n')).toMatch(
      /give the servers once/,
    );
  });

  it('serves upstreams on the HTTP front too', () => {
    const several = file('upstreams:\n  a: { command: a }\n');
    expect(load(['--config', several, '--listen', '0']).config.upstreams?.a).toMatchObject({ command: 'a' });
  });

  it('leaves the one-server config as it was', () => {
    expect(load(['--', 'node', 'server.js']).config.upstream).toMatchObject({
      command: 'node',
      args: ['server.js'],
    });
    expect(load([]).config.upstream).toMatchObject(FALLBACK);
    expect(load([]).config.upstreams).toBeUndefined();
  });
});

const DESKTOP = {
  globalShortcut: 'Ctrl+Space',
  mcpServers: {
    filesystem: {
      command: 'npx',
      args: ['-y', '@modelcontextprotocol/server-filesystem', '/Users/me/Desktop'],
    },
    'brave search': { command: 'npx', args: ['-y', 'brave'], env: { BRAVE_API_KEY: 'k' } },
    remote: { type: 'http', url: 'https://mcp.example/mcp', headers: { Authorization: 'Bearer t' } },
    off: { command: 'nothing', disabled: true },
  },
};

describe('--servers FILE: a desktop client’s mcpServers JSON', () => {
  it('reads every enabled server as it is written, names made prefix-safe', () => {
    const path = file(JSON.stringify(DESKTOP, null, 2), 'json');
    const { config } = load(['--servers', path]);
    expect(Object.keys(config.upstreams ?? {})).toEqual(['filesystem', 'brave-search', 'remote']);
    expect(config.upstreams?.['brave-search']).toMatchObject({ command: 'npx', env: { BRAVE_API_KEY: 'k' } });
    expect(config.upstreams?.remote).toMatchObject({
      url: 'https://mcp.example/mcp',
      headers: { Authorization: 'Bearer t' },
    });
    expect(config.upstream).toBeUndefined();
  });

  it('names what it cannot use', () => {
    expect(problemsOf(['--servers', file('{"servers": {}}', 'json')]).join('\n')).toMatch(
      /expected \{"mcpServers"/,
    );
    const sse = file(JSON.stringify({ mcpServers: { old: { type: 'sse', url: 'http://x/sse' } } }), 'json');
    expect(problemsOf(['--servers', sse]).join('\n')).toMatch(
      /mcpServers\."old": type "sse" is the old HTTP\+SSE/,
    );
    expect(problemsOf(['--servers', join(dir, 'missing.json')]).join('\n')).toMatch(/no such file/);
  });

  it('is one way of giving the servers: not with "--" nor with upstreams in the config file', async () => {
    const path = file(JSON.stringify(DESKTOP), 'json');
    expect(
      await thrownBy(Promise.resolve().then(() => parseCommandLine(['--servers', path, '--', 'node']))),
    ).toBeInstanceOf(UsageError);
    const several = file('upstreams:\n  a: { command: a }\n');
    expect(problemsOf(['--servers', path, '--config', several]).join('\n')).toMatch(/give the servers once/);
  });
});
