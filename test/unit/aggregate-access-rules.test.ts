/**
 * auth.rules with several servers behind one endpoint (issues 31 and 32): the operator writes tool globs
 * against the names the client sees, prefixed with their server's name, and both eras are held to them. The
 * HTTP front in process in front of two SDK 1.x servers on real sockets, each with an `echo`; the caller's
 * rights come from real OAuth access tokens (JWTs of oidc-provider, with the client's `groups` claim).
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { aggregateHttpGateway } from '../helpers/aggregate-http.js';
import { httpTransport } from '../helpers/http-client.js';
import { Inbox } from '../helpers/inbox.js';
import { fakeServer, textResult, type FakeTool } from '../helpers/in-process.js';
import { EXTENSION_META, modernRequest } from '../helpers/modern-raw.js';
import {
  AuthorizationServer,
  OPERATOR_CLIENT,
  STAFF_CLIENT,
  type OAuthClient,
} from '../helpers/oauth-server.js';
import { freePort } from '../helpers/ports.js';
import { thrownBy } from '../helpers/thrown.js';
import { textOf } from '../helpers/tool-results.js';

const closing: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

const echoOf = (server: string): FakeTool => ({
  name: 'echo',
  run: (args) => textResult(`${server}: ${String(args.text)}`),
});

/** Staff may call a's tools only; operators b's as well. */
const RULES = [
  { groups: ['staff'], tools: { allow: ['a__*'] } },
  { groups: ['operators'], tools: { allow: ['b__*'] } },
];

/** The audit's line for the refused call, naming the tool as the client did. */
const DENIED = '"event":"access.denied","right":"tool","tool":"b__echo","subject":"alice"';

interface Gated {
  url: URL;
  /** The headers of a request with an access token of `client`. */
  as(client: OAuthClient): Promise<Record<string, string>>;
  /** taskgate's log lines, the audit's among them. */
  logged: Inbox<string>;
}

async function gated(
  rules: typeof RULES = RULES,
  servers: Record<string, FakeTool[]> = { a: [echoOf('a')], b: [echoOf('b')] },
  withoutPrefix: string[] = [],
): Promise<Gated> {
  const as = await AuthorizationServer.start(['mcp:tools']);
  closing.push(() => as.close());
  const logged = new Inbox<string>();
  const port = await freePort();
  const resource = `http://127.0.0.1:${port}/mcp`;
  const url = await aggregateHttpGateway(
    closing,
    Object.fromEntries(
      Object.entries(servers).map(([name, tools]) => [name, () => fakeServer(tools).server]),
    ),
    {
      auth: { oauth: { issuer: as.issuer, resource, scopes: ['mcp:tools'] }, rules },
      listen: `127.0.0.1:${port}`,
      logger: pino({ level: 'info' }, { write: (line: string) => logged.push(line) }),
      withoutPrefix,
    },
  );
  return {
    url,
    as: async (client) => ({ authorization: `Bearer ${await as.token(resource, 'mcp:tools', client)}` }),
    logged,
  };
}

describe('auth.rules tool globs with several servers: written against the prefixed names (issue 32)', () => {
  it('a 2025 client: lists and calls only the tools its rules allow by their prefixed names', async () => {
    const { url, as, logged } = await gated();
    const connect = async (client: OAuthClient): Promise<Client> => {
      const connected = new Client({ name: 'aggregate-rules-test', version: '1' });
      await connected.connect(httpTransport(url, { requestInit: { headers: await as(client) } }));
      closing.push(() => connected.close());
      return connected;
    };
    const staff = await connect(STAFF_CLIENT);
    expect((await staff.listTools()).tools.map((tool) => tool.name)).toEqual(['a__echo']);
    expect(textOf(await staff.callTool({ name: 'a__echo', arguments: { text: 'x' } }))).toBe('a: x');
    const refused = await thrownBy(staff.callTool({ name: 'b__echo', arguments: { text: 'x' } }));
    expect(refused).toBeInstanceOf(McpError);
    expect((refused as McpError).code).toBe(-32602);
    expect((refused as McpError).message).toBe('MCP error -32602: Unknown tool: b__echo');
    await logged.waitFor((line) => line.includes(DENIED), 'the access.denied line');

    const operator = await connect(OPERATOR_CLIENT);
    expect((await operator.listTools()).tools.map((tool) => tool.name).sort()).toEqual([
      'a__echo',
      'b__echo',
    ]);
    expect(textOf(await operator.callTool({ name: 'b__echo', arguments: { text: 'y' } }))).toBe('b: y');
  });

  it('a 2026-07-28 client: the same, through the bridge before the aggregator', async () => {
    const { url, as, logged } = await gated();
    const staff = await as(STAFF_CLIENT);
    const request = (method: string, params: Record<string, unknown>, headers = staff) =>
      modernRequest(url, method, params, EXTENSION_META, headers);
    const listed = await request('tools/list', {});
    expect((listed.result?.tools as { name: string }[]).map((tool) => tool.name)).toEqual(['a__echo']);
    const allowed = await request('tools/call', { name: 'a__echo', arguments: { text: 'x' } });
    expect(allowed.result).toMatchObject({ resultType: 'task' });
    const refused = await request('tools/call', { name: 'b__echo', arguments: { text: 'x' } });
    expect(refused.error).toMatchObject({ code: -32602, message: 'Unknown tool: b__echo' });
    await logged.waitFor((line) => line.includes(DENIED), 'the access.denied line');

    const operator = await as(OPERATOR_CLIENT);
    const both = await request('tools/list', {}, operator);
    expect((both.result?.tools as { name: string }[]).map((tool) => tool.name).sort()).toEqual([
      'a__echo',
      'b__echo',
    ]);
    const called = await request('tools/call', { name: 'b__echo', arguments: { text: 'y' } }, operator);
    expect(called.result).toMatchObject({ resultType: 'task' });
  });

  it('a server mounted without prefix: its tool the rules do not grant is hidden, and refused as a name no server has is, and audited, in both eras', async () => {
    // b and c are mounted without prefix; staff may call a's tools only. c's `secret` collides with b's,
    // which staff never sees: its listing goes on, naming neither.
    const secretOf = (server: string): FakeTool => ({ name: 'secret', run: () => textResult(server) });
    const { url, as, logged } = await gated(
      [
        { groups: ['staff'], tools: { allow: ['a__*'] } },
        { groups: ['operators'], tools: { allow: ['*'] } },
      ],
      { a: [echoOf('a')], b: [{ ...echoOf('b'), name: 'shout' }, secretOf('b')], c: [secretOf('c')] },
      ['b', 'c'],
    );
    const deniedLine = '"event":"access.denied","right":"tool","tool":"shout","subject":"alice"';
    const staffHeaders = await as(STAFF_CLIENT);
    const staff = new Client({ name: 'aggregate-rules-test', version: '1' });
    await staff.connect(httpTransport(url, { requestInit: { headers: staffHeaders } }));
    closing.push(() => staff.close());
    expect((await staff.listTools()).tools.map((tool) => tool.name)).toEqual(['a__echo']);
    const refused = await thrownBy(staff.callTool({ name: 'shout', arguments: { text: 'x' } }));
    expect((refused as McpError).code).toBe(-32602);
    expect((refused as McpError).message).toBe('MCP error -32602: Unknown tool: shout');
    await logged.waitFor((line) => line.includes(deniedLine), 'the access.denied line');
    // A name no server has is answered alike: the answers tell nothing of which hidden tools exist.
    const missing = await thrownBy(staff.callTool({ name: 'nosuch', arguments: { text: 'x' } }));
    const answer = (error: unknown, name: string) => {
      const { code, message, data } = error as McpError;
      return { code, message: message.replace(name, '<name>'), data };
    };
    expect(answer(missing, 'nosuch')).toEqual(answer(refused, 'shout'));

    const request = (method: string, params: Record<string, unknown>) =>
      modernRequest(url, method, params, EXTENSION_META, staffHeaders);
    const listed = await request('tools/list', {});
    expect((listed.result?.tools as { name: string }[]).map((tool) => tool.name)).toEqual(['a__echo']);
    const denials = () => logged.items.filter((line) => line.includes(deniedLine)).length;
    const before = denials();
    const modern = await request('tools/call', { name: 'shout', arguments: { text: 'x' } });
    expect(modern.error).toMatchObject({ code: -32602, message: 'Unknown tool: shout' });
    await logged.waitFor(() => denials() > before, 'a second access.denied line');
    const modernMissing = await request('tools/call', { name: 'nosuch', arguments: { text: 'x' } });
    expect(modernMissing.error).toEqual({ ...modern.error, message: 'Unknown tool: nosuch' });

    const operator = new Client({ name: 'aggregate-rules-test', version: '1' });
    await operator.connect(httpTransport(url, { requestInit: { headers: await as(OPERATOR_CLIENT) } }));
    closing.push(() => operator.close());
    const collision = await thrownBy(operator.listTools());
    expect((collision as McpError).message).toMatch(/"secret" is listed by server "b" and by server "c"/);
  });
});
