/**
 * A real client nobody here wrote: the MCP Inspector CLI (Node 22, from test/inspector) lists tools and
 * calls a plain and a task-required tool through taskgate, in front of server-everything and of the
 * project's legacy fixture.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { startEverythingHttp } from '../helpers/everything-http.js';
import { FIXTURES, Gateway, TASKGATE } from '../helpers/taskgate.js';

const root = (path: string): string => fileURLToPath(new URL(`../../${path}`, import.meta.url));
const NODE_22 = root('test/inspector/node_modules/node/bin/node');
const INSPECTOR = root(
  'test/inspector/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js',
);
const EVERYTHING = root('node_modules/@modelcontextprotocol/server-everything/dist/index.js');

const run = promisify(execFile);

/** One Inspector CLI run (`--cli --format json -q`), its JSON output parsed. */
async function inspector(args: string[]): Promise<Record<string, unknown>> {
  const { stdout } = await run(NODE_22, [INSPECTOR, '--cli', '--format', 'json', '-q', ...args], {
    timeout: 60_000,
  });
  return JSON.parse(stdout) as Record<string, unknown>;
}

/** The Inspector CLI in front of taskgate on stdio, which runs `upstream`. */
const inspect = (
  upstream: string[],
  args: string[],
  flags: string[] = [],
): Promise<Record<string, unknown>> =>
  inspector([...args, '--', process.execPath, TASKGATE, '--log-level', 'warn', ...flags, '--', ...upstream]);

const textOf = (output: Record<string, unknown>): string =>
  JSON.stringify((output.result as { content?: unknown } | undefined)?.content ?? output);

describe('the MCP Inspector CLI through taskgate', () => {
  it('is installed (npm test installs test/inspector)', () => {
    expect(existsSync(NODE_22)).toBe(true);
    expect(existsSync(INSPECTOR)).toBe(true);
  });

  describe('in front of server-everything', () => {
    const upstream = [process.execPath, EVERYTHING, 'stdio'];

    it('lists the tools, the task requirement hidden from a client that declares no tasks', async () => {
      const output = await inspect(upstream, ['--method', 'tools/list']);
      expect(JSON.stringify(output)).toContain('simulate-research-query');
      expect(JSON.stringify(output)).not.toContain('"taskSupport":"required"');
    });

    it('calls a plain tool', async () => {
      const output = await inspect(upstream, [
        '--method',
        'tools/call',
        '--tool-name',
        'echo',
        '--tool-arg',
        'message=hello',
      ]);
      expect(textOf(output)).toContain('hello');
    });

    it('calls the task-required tool (taskgate unwraps the task)', async () => {
      const output = await inspect(upstream, [
        '--method',
        'tools/call',
        '--tool-name',
        'simulate-research-query',
        '--tool-arg',
        'topic=otters',
      ]);
      expect(textOf(output)).toContain('Research Report: otters');
    });
  });

  describe('in front of the legacy fixture', () => {
    const upstream = [process.execPath, FIXTURES.legacy];

    it('lists the tools', async () => {
      const output = await inspect(upstream, ['--method', 'tools/list']);
      expect(JSON.stringify(output)).toContain('"echo"');
    });

    it('calls a plain tool', async () => {
      const output = await inspect(upstream, [
        '--method',
        'tools/call',
        '--tool-name',
        'echo',
        '--tool-arg',
        'text=hi',
      ]);
      expect(textOf(output)).toContain('hi');
    });

    it('calls a tool that policy makes task-required', async () => {
      const output = await inspect(
        upstream,
        ['--method', 'tools/call', '--tool-name', 'sleep', '--tool-arg', 'ms=50'],
        ['--tool-task-support', 'sleep=required'],
      );
      expect(textOf(output)).toContain('slept 50 ms');
    });
  });

  it.each([
    { front: 'the HTTP gateway', upstream: 'stdio' },
    { front: 'the sidecar', upstream: 'http' },
  ])(
    'issue 27: over $front, the unwrapped task is seen to end and the session ends as abandoned',
    async (c) => {
      const everything = c.upstream === 'http' ? await startEverythingHttp() : undefined;
      const gateway = await Gateway.start(everything ? [] : [process.execPath, EVERYTHING, 'stdio'], [
        '--abandoned-session-timeout',
        '1000',
        ...(everything ? ['--upstream-url', everything.url] : []),
      ]);
      try {
        const output = await inspector([
          '--transport',
          'http',
          '--server-url',
          gateway.url.href,
          '--method',
          'tools/call',
          '--tool-name',
          'simulate-research-query',
          '--tool-arg',
          'topic=otters',
        ]);
        expect(textOf(output)).toContain('Research Report: otters');
        const metrics = await (await fetch(new URL('/metrics', gateway.url))).text();
        expect(metrics).toContain('taskgate_tasks_live{status="working"} 0');
        // Abandoned after 1 s, not kept for the 30-minute idle timeout as a session running a task.
        await gateway.logged('ending an abandoned session', 20_000);
      } finally {
        await gateway.stop();
        await everything?.stop();
      }
    },
    90_000,
  );
});
