/**
 * Vitest global setup for the tests that run the built CLI: builds dist/ again when any source file is
 * newer than the last build, so that a test never runs stale code.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function newestUnder(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) newest = Math.max(newest, statSync(join(entry.parentPath, entry.name)).mtimeMs);
  }
  return newest;
}

function builtAt(): number {
  try {
    return statSync(join(ROOT, 'dist', 'cli.js')).mtimeMs;
  } catch {
    return 0;
  }
}

export default function setup(): void {
  if (newestUnder(join(ROOT, 'src')) <= builtAt()) return;
  execFileSync(
    process.execPath,
    [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json', '--noCheck'],
    {
      cwd: ROOT,
      stdio: 'inherit',
    },
  );
}
