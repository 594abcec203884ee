import { expect } from 'vitest';
import { ConfigError } from '../../src/config/load.js';

/** The problems a config is refused with; fails the test when `load` accepts it. */
export function problemsOf(load: () => unknown): string[] {
  try {
    load();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).problems;
  }
  throw new Error('expected the config to be refused');
}
