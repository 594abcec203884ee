/**
 * The documentation cannot drift from the schema: every setting is in the README's reference with its
 * default, flag and variable, and `--help` shows every flag with the default the schema gives.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { HELP } from '../../src/config/help.js';
import { defaultOf, frontDefaultsOf, leafPaths } from '../../src/config/introspect.js';
import { FLAG_SETTINGS, SETTINGS, envName } from '../../src/config/settings.js';

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

/** The README's reference row of a setting: the table line that starts with it. */
const rowOf = (path: string): string | undefined =>
  readme.split('\n').find((line) => line.replace(/\s+/g, ' ').startsWith(`| \`${path}\` |`));

describe('the README’s config reference', () => {
  it('walks a schema with settings in every section', () => {
    const paths = leafPaths();
    expect(paths).toEqual(
      expect.arrayContaining([
        'upstream.env',
        'tasks.maxTtl',
        'unwrap.keepAliveInterval',
        'tools[].timeout',
        'logLevel',
      ]),
    );
  });

  it.each(leafPaths())('has a row for %s', (path) => {
    expect(rowOf(path), `README.md has no reference row for \`${path}\``).toBeDefined();
  });

  it.each(leafPaths().filter((path) => ['number', 'boolean', 'string'].includes(typeof defaultOf(path))))(
    'gives the schema’s default for %s',
    (path) => {
      expect(rowOf(path)).toContain(String(defaultOf(path)));
    },
  );

  it.each(leafPaths().filter((path) => frontDefaultsOf(path) !== undefined))(
    'gives the default on each front for %s',
    (path) => {
      const { stdio, http } = frontDefaultsOf(path)!;
      expect(rowOf(path)).toContain(`stdio: ${String(stdio ?? 'none')}; HTTP: ${String(http)}`);
    },
  );

  it.each(SETTINGS.map((setting) => [setting.path.join('.'), setting] as const))(
    'names the flag and variable of %s',
    (path, setting) => {
      // A secret has no flag, only its variable.
      if (setting.secret) expect(rowOf(path)).not.toContain(`--${setting.flag}`);
      else expect(rowOf(path)).toContain(`\`--${setting.flag}\``);
      expect(rowOf(path)).toContain(`\`${envName(setting)}\``);
    },
  );
});

describe('--help', () => {
  it.each(FLAG_SETTINGS.map((setting) => [setting.flag, setting] as const))(
    'documents --%s with its default',
    (flag, setting) => {
      const line = HELP.split('\n').findIndex((text) => text.startsWith(`  --${flag}`));
      expect(line).toBeGreaterThan(-1);
      // The entry runs on until the next flag.
      const entry = HELP.split('\n')
        .slice(line)
        .join('\n')
        .split(/\n {2}-/)[0]!
        .replace(/\s+/g, ' ');
      const path = setting.path.join('.');
      const byFront = frontDefaultsOf(path);
      const value = defaultOf(path);
      const shown = value === undefined ? 'none' : String(value);
      if (byFront !== undefined) {
        const text = (front: unknown): string =>
          setting.sets === undefined ? String(front ?? 'none') : front === true ? 'on' : 'off';
        expect(entry).toContain(
          `(default ${text(byFront.stdio)} over stdio, ${text(byFront.http)} on the HTTP front)`,
        );
      } else {
        // A boolean flag shows the setting's default, a --no-X flag's too (issue 14.10).
        expect(entry).toContain(
          setting.sets === undefined ? `(default ${shown}` : `(default ${value === true ? 'on' : 'off'})`,
        );
      }
    },
  );

  it.each(SETTINGS.filter((setting) => setting.secret).map((setting) => [envName(setting)]))(
    'documents the secret %s among the variables, and has no flag for it',
    (name) => {
      expect(HELP.split('\n').some((line) => line.startsWith(`  ${name} `))).toBe(true);
      expect(HELP).not.toContain(`--${name.slice('TASKGATE_'.length).toLowerCase().replace(/_/g, '-')}`);
    },
  );

  it('documents the flags that are not single settings, and the sub-commands', () => {
    for (const text of ['--config FILE', '--tool-task-support GLOB=VALUE', '-h, --help', '-v, --version']) {
      expect(HELP).toContain(text);
    }
    expect(HELP).toContain('check-config FILE');
    expect(HELP).toContain('print-config');
  });

  it('keeps every line within 100 columns', () => {
    expect(HELP.split('\n').filter((line) => line.length > 100)).toEqual([]);
  });
});
