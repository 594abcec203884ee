/**
 * What a first real user hits (issue 14): taskgate inserted "without a second thought" must not change
 * what an ordinary client can do.
 */
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { FIXTURES, INITIALIZE, TASKGATE } from '../helpers/taskgate.js';

const INITIALIZED = { jsonrpc: '2.0', method: 'notifications/initialized' };

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Writes the lines to taskgate's stdin at once, ends it, and returns what came out and the exit code. */
async function pipeThrough(
  lines: object[],
  upstream: string[],
  command: string[] = [process.execPath, TASKGATE],
): Promise<{ out: unknown[]; code: number | null }> {
  const [program, ...args] = command;
  const child = spawn(program!, [...args, '--', ...upstream], { stdio: 'pipe' });
  let stdout = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.resume();
  child.stdin.end(lines.map((line) => JSON.stringify(line) + '\n').join(''));
  const [code] = (await once(child, 'exit')) as [number | null];
  return {
    out: stdout
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as unknown),
    code,
  };
}

describe('issue 14.1: piped input', () => {
  it('answers everything read before the end of input, then exits 0', async () => {
    const { out, code } = await pipeThrough(
      [INITIALIZE, INITIALIZED, { jsonrpc: '2.0', id: 1, method: 'tools/list' }],
      [process.execPath, FIXTURES.legacy],
    );
    expect(out).toEqual([
      expect.objectContaining({
        id: 'init',
        result: expect.objectContaining({ capabilities: expect.any(Object) }),
      }),
      expect.objectContaining({
        id: 1,
        result: { tools: expect.arrayContaining([expect.objectContaining({ name: 'echo' })]) },
      }),
    ]);
    expect(code).toBe(0);
  });

  it('waits for a slow call, a task it serves and a cancelled request, all sent before the end', async () => {
    const sleep = (id: number, ms: number, task?: object) => ({
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: { name: 'sleep', arguments: { ms }, ...(task && { task }) },
    });
    const { out, code } = await pipeThrough(
      [
        INITIALIZE,
        INITIALIZED,
        sleep(1, 400),
        sleep(2, 10_000),
        {
          jsonrpc: '2.0',
          method: 'notifications/cancelled',
          params: { requestId: 2, reason: 'changed my mind' },
        },
        sleep(3, 200, { ttl: 60_000 }),
      ],
      [process.execPath, FIXTURES.legacy],
    );
    const byId = new Map(out.map((message) => [(message as { id: unknown }).id, message]));
    expect(byId.get(1)).toMatchObject({ result: { content: [expect.any(Object)] } });
    expect(byId.has(2)).toBe(false);
    expect(byId.get(3)).toMatchObject({ result: { task: { status: 'working' } } });
    expect(code).toBe(0);
  });
});

describe('issue 14.11: a taskgate command from a checkout, as the README says', () => {
  it('npm install -g . gives a taskgate command that serves a client', async () => {
    const prefix = await mkdtemp(join(tmpdir(), 'taskgate-install-'));
    try {
      await promisify(execFile)('npm', [
        'install',
        '-g',
        '--prefix',
        prefix,
        '--no-audit',
        '--no-fund',
        ROOT,
      ]);
      const { out, code } = await pipeThrough(
        [INITIALIZE, INITIALIZED],
        [process.execPath, FIXTURES.example],
        [join(prefix, 'bin', 'taskgate')],
      );
      expect(out).toEqual([expect.objectContaining({ id: 'init', result: expect.any(Object) })]);
      expect(code).toBe(0);
    } finally {
      await rm(prefix, { recursive: true, force: true });
    }
  });

  it('npm pack ships the built command and the bundled example server', async () => {
    const { stdout } = await promisify(execFile)('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
      cwd: ROOT,
    });
    const [{ files }] = JSON.parse(stdout) as [{ files: { path: string }[] }];
    expect(files.map((file) => file.path)).toEqual(
      expect.arrayContaining(['dist/cli.js', 'examples/legacy-server.js', 'package.json', 'LICENSE']),
    );
  });

  it('issue 27: ships the MIT LICENSE that package.json names', async () => {
    const pkg = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { license?: string };
    expect(pkg.license).toBe('MIT');
    expect(await readFile(join(ROOT, 'LICENSE'), 'utf8')).toMatch(/^MIT License\n\nCopyright \(c\) \d{4} /);
  });

  it('issue 27: the README’s one-line check, run as written, prints an initialize result with "tasks"', async () => {
    const readme = await readFile(join(ROOT, 'README.md'), 'utf8');
    const check = readme.split('\n').filter((line) => /^echo '.*' \| taskgate\b/.test(line));
    expect(check, 'the one-line check in the README').toHaveLength(1);
    // `taskgate` on the PATH is this checkout's build, as `npm install -g .` would make it.
    const bin = await mkdtemp(join(tmpdir(), 'taskgate-check-'));
    try {
      await writeFile(join(bin, 'taskgate'), `#!/bin/sh\nexec "${process.execPath}" "${TASKGATE}" "$@"\n`, {
        mode: 0o755,
      });
      const { stdout, stderr } = await promisify(execFile)('sh', ['-c', check[0]!], {
        env: { ...process.env, PATH: `${bin}:${process.env['PATH'] ?? ''}` },
        timeout: 30_000,
      });
      const out = stdout
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as unknown);
      expect(out).toEqual([
        expect.objectContaining({
          id: 1,
          result: expect.objectContaining({
            capabilities: expect.objectContaining({ tasks: expect.any(Object) }),
          }),
        }),
      ]);
      // `--log-level warn`: nothing on stderr when all is well.
      expect(stderr).toBe('');
    } finally {
      await rm(bin, { recursive: true, force: true });
    }
  });

  it('issue 27: the README starts with a quick start that says where the logs go, asks for an absolute "command" and leads to Troubleshooting', async () => {
    const readme = await readFile(join(ROOT, 'README.md'), 'utf8');
    const heading = (title: string): number => readme.search(new RegExp(`^#+ ${title}`, 'm'));
    const quickStart = heading('Quick start');
    expect(quickStart).toBeGreaterThan(0);
    for (const later of ['What it does', 'Configuration', 'Reference', 'Troubleshooting'])
      expect(heading(later), later).toBeGreaterThan(quickStart);
    const start = readme.slice(quickStart, heading('What it does'));
    expect(start).toMatch(/"command"` as an absolute path/);
    expect(start).toMatch(/"command": "\/[^"]+\/taskgate"/);
    expect(start).toMatch(/taskgate's log, and the server's stderr inside it, go where the client puts/);
    expect(start).toContain('(#troubleshooting)');
  });
});
