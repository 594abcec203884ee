/** What `check-config` and `print-config` say about a loaded config. */
import { stringify } from 'yaml';
import type { Loaded } from './load.js';
import { maskCommand, maskSecrets, maskUrl } from './mask.js';

/** One line for `check-config`: the file is fine, and what it sets up. */
export function summary({ config, file }: Loaded): string {
  const { url, command, args } = config.upstream ?? {};
  const upstream =
    url !== undefined ? maskUrl(url) : command !== undefined ? maskCommand(command, args ?? []) : 'none';
  if (config.upstreams !== undefined) {
    const names = Object.keys(config.upstreams).join(', ');
    return `${file ?? '(no config file)'}: ok: ${Object.keys(config.upstreams).length} servers (${names}), up to ${config.tasks.maxTasks} tasks`;
  }
  const rules = config.tools.length === 1 ? '1 tool rule' : `${config.tools.length} tool rules`;
  return `${file ?? '(no config file)'}: ok: upstream "${upstream}", ${rules}, up to ${config.tasks.maxTasks} tasks`;
}

/** The effective config as YAML, secrets masked, for `print-config`. */
export function printable({ config, file }: Loaded): string {
  const source = file === undefined ? 'no config file' : `config file ${file}`;
  return (
    `# taskgate's effective configuration (${source}; flags > TASKGATE_* > file > defaults), secrets masked\n` +
    stringify(maskSecrets(config))
  );
}
