import { ConfigSchema, type Config, type ConfigInput } from './schema.js';

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((problem) => `  - ${problem}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** Validates a merged config input; every problem is listed with its path (`tasks.maxTtl: ...`). */
export function resolveConfig(input: ConfigInput): Config {
  const parsed = ConfigSchema.safeParse(input);
  if (parsed.success) return parsed.data;
  throw new ConfigError(
    parsed.error.issues.map((issue) => {
      const path = issue.path
        .map((part, i) =>
          typeof part === 'number' ? `[${part}]` : i === 0 ? String(part) : `.${String(part)}`,
        )
        .join('');
      return `${path || '(root)'}: ${issue.message}`;
    }),
  );
}
