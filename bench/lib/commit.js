// @ts-check
/** Which commit a bench run measured, for its report. */
import { execFileSync } from 'node:child_process';
import { fromRoot } from './targets.js';

/**
 * The commit measured, and whether src/ differed from it (the build is of the work tree).
 * @param {string} dir the checkout (this one unless told)
 */
export function commit(dir = fromRoot('.')) {
  try {
    const git = (/** @type {string[]} */ args) =>
      execFileSync('git', args, {
        cwd: dir,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      }).trim();
    const dirty = git(['status', '--porcelain', '--', 'src', 'package.json', 'package-lock.json']) !== '';
    return `${git(['rev-parse', '--short', 'HEAD'])}${dirty ? ' with uncommitted changes to src/ or the packages' : ''}`;
  } catch {
    return 'unknown (not a git checkout)';
  }
}
