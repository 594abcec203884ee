/**
 * The demo a person runs first (`npm run demo`): the bundled client → built taskgate on its embedded
 * defaults → the bundled example server. Run without a terminal, it prints one plain line per change.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const DEMO = fileURLToPath(new URL('../../examples/demo-client.js', import.meta.url));

describe('the demo', () => {
  it('runs slow calls as tasks, shows their progress, cancels one, prints the results and exits 0', async () => {
    const child = spawn(process.execPath, [DEMO], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const [code] = (await once(child, 'close')) as [number | null];
    expect(stderr).toBe('');
    expect(code).toBe(0);

    const lines = stdout.split('\n');
    expect(lines[0]).toBe(
      'taskgate is in front of example-slow-server, a server without tasks; it offers tasks: yes',
    );
    expect(lines).toContain('starting 3 slow-report calls as tasks');
    for (const topic of ['the tides', 'honey bees', 'volcanoes']) {
      expect(lines).toContainEqual(
        expect.stringMatching(new RegExp(`^"${topic}" is task [0-9a-f-]{36}: working, answered at once$`)),
      );
    }
    // Progress, one plain line per step (no terminal: no escape sequences).
    expect(lines).toContain('[the tides]    working step 1/4');
    expect(lines).toContain('[volcanoes]    working step 6/6');
    expect(stdout).not.toContain('\x1b[');
    expect(lines).toContain('cancelling the task for "honey bees"');
    expect(lines).toContainEqual(expect.stringMatching(/^\[honey bees\] {3}cancelled step \d\/8$/));
    expect(lines).toContain('[the tides]    completed step 4/4');

    const results = lines.slice(lines.indexOf('results:'));
    expect(results).toEqual([
      'results:',
      '  the tides: completed',
      '      Report on: the tides',
      '      - Worked on it for 2 s in 4 steps.',
      '      - Finding: the tides is more interesting than it looks.',
      '      - Next step: read more about the tides.',
      '  honey bees: cancelled',
      '  volcanoes: completed',
      '      Report on: volcanoes',
      '      - Worked on it for 3 s in 6 steps.',
      '      - Finding: volcanoes is more interesting than it looks.',
      '      - Next step: read more about volcanoes.',
      'done',
      '',
    ]);
  });
});
