/**
 * A config file: read, parsed as YAML or JSON (by its extension; a .json file must be JSON to the letter,
 * then both are read with `yaml`, which knows where each value sits so a problem can name its line),
 * `${VAR}` interpolated, and checked against the schema on its own: a file is either valid or reported,
 * whatever flags and variables override.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { extname } from 'node:path';
import type * as Yaml from 'yaml';
import type { ConfigPath } from './introspect.js';
import { interpolate } from './interpolate.js';
import { describeIssues } from './problems.js';
import { ConfigSchema } from './schema.js';

export interface ConfigFile {
  path: string;
  /** The file's settings with `${VAR}` replaced; undefined when it could not be read or parsed. */
  input?: Record<string, unknown>;
  /** Everything wrong with the file, each problem with its path and line. */
  problems: string[];
}

const SCHEMAS: Record<string, 'core' | 'json'> = { '.yaml': 'core', '.yml': 'core', '.json': 'json' };

export function readConfigFile(path: string, env: Readonly<Record<string, string | undefined>>): ConfigFile {
  const schema = SCHEMAS[extname(path).toLowerCase()];
  if (schema === undefined) {
    return { path, problems: [`${path}: name it .yaml, .yml or .json (the extension says how to read it)`] };
  }
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    return { path, problems: [`cannot read config file ${path}: ${readFailure(error)}`] };
  }

  // Loaded only for a run with a config file (yaml is a fair part of a start's time); its CommonJS build
  // is what Node imports anyway, and require keeps readConfigFile synchronous.
  const { LineCounter, parseDocument } = createRequire(import.meta.url)('yaml') as typeof Yaml;
  const lines = new LineCounter();
  const document = parseDocument(text, { lineCounter: lines, prettyErrors: false, schema });
  const where = (offset: number): string => {
    const { line, col } = lines.linePos(offset);
    return `line ${line}, column ${col}`;
  };
  // YAML accepts what JSON does not (a trailing comma, comments, single quotes).
  const notJson = schema === 'json' ? jsonSyntaxError(text) : undefined;
  if (notJson !== undefined) {
    return { path, problems: [`${where(notJson.offset)}: not valid JSON: ${notJson.message}`] };
  }
  if (document.errors.length > 0) {
    return {
      path,
      problems: document.errors.map(
        (error) =>
          `${where(error.pos[0])}: not valid ${schema === 'json' ? 'JSON' : 'YAML'}: ${error.message}`,
      ),
    };
  }
  const root: unknown = document.toJS() ?? {};
  if (typeof root !== 'object' || Array.isArray(root)) {
    const got = Array.isArray(root) ? 'a list' : JSON.stringify(root);
    return { path, problems: [`(root): expected a mapping of settings, got ${got}`] };
  }
  const { value, problems: unset } = interpolate(root, env);
  const input = value as Record<string, unknown>;
  const parsed = ConfigSchema.safeParse(input, { reportInput: true });
  const found = [...unset, ...(parsed.success ? [] : describeIssues(parsed.error.issues))];
  // In the order they appear in the file, each with its line.
  const placed = found.map((problem) => ({ problem, offset: offsetOf(document, problem.path) ?? 0 }));
  placed.sort((a, b) => a.offset - b.offset);
  return {
    path,
    input,
    problems: placed.map(({ problem, offset }) => `${problem.text} (line ${lines.linePos(offset).line})`),
  };
}

/** JSON.parse's own complaint, with the offset it names (the end of the text when it names none). */
function jsonSyntaxError(text: string): { message: string; offset: number } | undefined {
  try {
    JSON.parse(text);
    return undefined;
  } catch (error) {
    const message = (error as SyntaxError).message;
    const position = / in JSON at position (\d+)/.exec(message);
    return position
      ? { message: message.slice(0, position.index), offset: Number(position[1]) }
      : { message: message.replace(/ JSON input$/, ' of the file'), offset: text.length };
  }
}

/** Where the value at `path` starts, or the closest enclosing value that exists. */
function offsetOf(document: Yaml.Document, path: ConfigPath): number | undefined {
  for (let length = path.length; length >= 0; length--) {
    const node: unknown = document.getIn(path.slice(0, length), true);
    const range = (node as { range?: [number, number, number] } | undefined)?.range;
    if (range) return range[0];
  }
  return undefined;
}

function readFailure(error: unknown): string {
  switch ((error as NodeJS.ErrnoException).code) {
    case 'ENOENT':
      return 'no such file';
    case 'EACCES':
      return 'permission denied';
    case 'EISDIR':
      return 'it is a directory';
    default:
      return (error as Error).message;
  }
}
