/**
 * The `x-mcp-header` parameters of the upstream's tools, read from its tools/list for the bridge
 * (bridge.ts): a tools/call's `Mcp-Param-*` headers must mirror its arguments (protocol/modern/headers.ts).
 * Read once, and again after a list_changed or a tools/list that failed. A tool it does not list has none:
 * the upstream answers for it.
 */
import type { JsonRpcErrorObject } from '../protocol/errors.js';
import { isObject, type JsonObject } from '../protocol/messages.js';
import { headerParamsOf, type HeaderParam } from '../protocol/modern/headers.js';
import { Settling } from './settling.js';

/** tools/list pages read at most for the tools' header parameters. */
const MAX_TOOL_PAGES = 100;

export class ToolHeaders {
  /** Each tool's parameters, being read or read (its value once it is). */
  private byTool: Settling<Map<string, HeaderParam[]>> | undefined;

  /** `list` asks the Session for one page of tools/list. */
  constructor(
    private readonly list: (
      params: JsonObject,
    ) => Promise<{ result: JsonObject } | { error: JsonRpcErrorObject }>,
  ) {}

  /** A tool's parameters, if they are read already: known without waiting. */
  known(name: unknown): readonly HeaderParam[] | undefined {
    const known = this.byTool?.value;
    return known === undefined ? undefined : paramsIn(known, name);
  }

  /** A tool's parameters, read first if they are not. */
  async of(name: unknown): Promise<readonly HeaderParam[]> {
    this.byTool ??= new Settling(this.read());
    return paramsIn(await this.byTool.promise, name);
  }

  /** The tools' header parameters are read again, on the next tools/call that needs them. */
  forget(): void {
    this.byTool = undefined;
  }

  private async read(): Promise<Map<string, HeaderParam[]>> {
    const byTool = new Map<string, HeaderParam[]>();
    let cursor: unknown;
    for (let page = 0; page < MAX_TOOL_PAGES; page++) {
      const listed = await this.list(cursor === undefined ? {} : { cursor });
      if ('error' in listed) {
        // Read again on the next call, rather than checking nothing for as long as this bridge lives.
        this.forget();
        break;
      }
      const tools = listed.result.tools;
      for (const tool of Array.isArray(tools) ? tools : []) {
        if (!isObject(tool) || typeof tool.name !== 'string') continue;
        const params = headerParamsOf(tool.inputSchema);
        if (params.length > 0) byTool.set(tool.name, params);
      }
      cursor = listed.result.nextCursor;
      if (typeof cursor !== 'string') break;
    }
    return byTool;
  }
}

const paramsIn = (byTool: Map<string, HeaderParam[]>, name: unknown): readonly HeaderParam[] =>
  (typeof name === 'string' ? byTool.get(name) : undefined) ?? [];
