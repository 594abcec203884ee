/**
 * Hostile input at the protocol level (issue 13): values nested deeper than taskgate allows, from either
 * side and over either front, lines that only look like JSON, and ids JSON.parse cannot hold exactly. The
 * client side is a raw pipe (RawPeer), the upstream a raw-stdio fixture that writes whatever line a test
 * gives it (test/fixtures/scripted-server.js), so nothing on the way tidies the bytes up.
 */
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { Inbox } from '../helpers/inbox.js';
import { Gateway, INITIALIZE, RawPeer } from '../helpers/taskgate.js';

const SCRIPTED = fileURLToPath(new URL('../fixtures/scripted-server.js', import.meta.url));
/** Deep enough to make JSON.stringify overflow the stack (about 4 000 levels on Node 20). */
const DEPTH = 6000;
const deepArray = (depth: number): string => '['.repeat(depth) + ']'.repeat(depth);
const NESTING_LIMIT = /nested deeper than 512 levels/;

let peers: RawPeer[] = [];
let gateways: Gateway[] = [];
afterEach(async () => {
  await Promise.all(peers.map((peer) => peer.stop()));
  await Promise.all(gateways.map((gateway) => gateway.stop()));
  peers = [];
  gateways = [];
});

async function scripted(flags: string[] = []): Promise<RawPeer> {
  const peer = RawPeer.start([...flags, '--', process.execPath, SCRIPTED]);
  peers.push(peer);
  await peer.initialize();
  return peer;
}

/** The upstream answers this call by writing `lines` (`$ID` is the call's id). */
const script = (id: string, lines: string[], extra: Record<string, unknown> = {}): unknown => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name: 'script', arguments: { lines }, ...extra },
});

/** The task of a task-augmented call, once it has ended, and the answer to its tasks/result. */
async function taskOutcome(
  peer: RawPeer,
  id: string,
): Promise<{ task: Record<string, unknown>; result: Record<string, unknown> }> {
  const created = await peer.response(id);
  const taskId = (created.result as { task: { taskId: string } }).task.taskId;
  peer.send({ jsonrpc: '2.0', id: `${id}-result`, method: 'tasks/result', params: { taskId } });
  const result = await peer.response(`${id}-result`);
  peer.send({ jsonrpc: '2.0', id: `${id}-get`, method: 'tasks/get', params: { taskId } });
  const task = (await peer.response(`${id}-get`)).result as Record<string, unknown>;
  return { task, result };
}

async function stillServes(peer: RawPeer, id = 'after'): Promise<void> {
  peer.send({ jsonrpc: '2.0', id, method: 'ping' });
  expect(await peer.response(id)).toMatchObject({ result: {} });
  expect(peer.alive).toBe(true);
  expect(peer.badStdout).toEqual([]);
}

describe('issue 13.1: JSON nested deeper than the limit', () => {
  it('refuses a deep client request over stdio with -32600 naming the limit, addressed to its id', async () => {
    const peer = await scripted();
    // The line: its `task` is taken off, so the params would be serialized again.
    peer.write(`{"jsonrpc":"2.0","id":"d1","method":"foo/bar","params":{"task":{},"x":${deepArray(DEPTH)}}}`);
    const answer = await peer.response('d1');
    expect(answer.error).toMatchObject({ code: -32600, message: expect.stringMatching(NESTING_LIMIT) });
    // A deep task-augmented call, and a deep notification (never answered), change nothing either.
    peer.write(
      `{"jsonrpc":"2.0","id":"d2","method":"tools/call","params":{"name":"echo","task":{},"arguments":{"text":"x","deep":${deepArray(DEPTH)}}}}`,
    );
    peer.write(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"x":${deepArray(DEPTH)}}}`);
    expect((await peer.response('d2')).error).toMatchObject({ code: -32600 });
    await stillServes(peer);
    expect(peer.messages.items.filter((m) => 'error' in m && m.id === null)).toEqual([]);
  });

  it('fails a task whose upstream result is too deep, and answers its tasks/result, without dying', async () => {
    const peer = await scripted();
    peer.send(
      script('t1', [`{"jsonrpc":"2.0","id":$ID,"result":{"content":[],"x":${deepArray(DEPTH)}}}`], {
        task: {},
      }),
    );
    const { task, result } = await taskOutcome(peer, 't1');
    expect(task).toMatchObject({ status: 'failed', statusMessage: expect.stringMatching(NESTING_LIMIT) });
    expect(JSON.stringify(result)).toMatch(NESTING_LIMIT);
    await stillServes(peer);
  });

  it('fails a plain call whose upstream answer is too deep', async () => {
    const peer = await scripted();
    peer.send(script('p1', [`{"jsonrpc":"2.0","id":$ID,"result":{"x":${deepArray(DEPTH)}}}`]));
    expect((await peer.response('p1')).error).toMatchObject({
      code: -32603,
      message: expect.stringMatching(NESTING_LIMIT),
    });
    await stillServes(peer);
  });

  it('answers a deep request from the upstream with -32600 to the upstream, during a task', async () => {
    const peer = await scripted();
    peer.refuseRequests();
    const deepRequest = `{"jsonrpc":"2.0","id":"up1","method":"elicitation/create","params":{"message":"?","requestedSchema":{"type":"object","properties":{}},"x":${deepArray(DEPTH)}}}`;
    peer.send({
      jsonrpc: '2.0',
      id: 't2',
      method: 'tools/call',
      params: { name: 'script', arguments: { lines: [deepRequest], awaitReply: '"up1"' }, task: {} },
    });
    const { task, result } = await taskOutcome(peer, 't2');
    expect(task).toMatchObject({ status: 'completed' });
    const told = JSON.parse((result.result as { content: { text: string }[] }).content[0]!.text);
    expect(told).toMatchObject({
      id: 'up1',
      error: { code: -32600, message: expect.stringMatching(NESTING_LIMIT) },
    });
    expect(peer.messages.items.filter((m) => m.method === 'elicitation/create')).toEqual([]);
    await stillServes(peer);
  });

  it('gives the upstream the error when the client answers its request too deeply, and answers the client nothing', async () => {
    const peer = await scripted();
    const request = '{"jsonrpc":"2.0","id":"up2","method":"roots/list"}';
    peer.send(script('c1', [request], { arguments: { lines: [request], awaitReply: '"up2"' } }));
    await peer.messages.waitFor((m) => m.id === 'up2' && m.method === 'roots/list', 'roots/list');
    peer.write(`{"jsonrpc":"2.0","id":"up2","result":{"roots":[],"x":${deepArray(DEPTH)}}}`);
    const told = ((await peer.response('c1')).result as { content: { text: string }[] }).content[0]!.text;
    expect(told.length, 'what the upstream was told is short').toBeLessThan(1000);
    expect(JSON.parse(told)).toMatchObject({
      id: 'up2',
      error: { code: -32600, message: expect.stringMatching(NESTING_LIMIT) },
    });
    expect(peer.messages.items.filter((m) => m.id === 'up2' && 'error' in m)).toEqual([]);
    await stillServes(peer);
  });

  it('refuses deep initialize and logging/setLevel params over HTTP, so none is kept for a replay', async () => {
    const gateway = await Gateway.start([process.execPath, SCRIPTED]);
    gateways.push(gateway);
    const post = (body: string, sessionId?: string): Promise<Response> =>
      fetch(gateway.url, {
        method: 'POST',
        headers: {
          accept: 'application/json, text/event-stream',
          'content-type': 'application/json',
          ...(sessionId === undefined ? {} : { 'mcp-session-id': sessionId }),
        },
        body,
      });
    const { params } = INITIALIZE;
    const deepInit = await post(
      JSON.stringify({ ...INITIALIZE, id: 'i1', params: { ...params, x: '@' } }).replace(
        '"@"',
        deepArray(DEPTH),
      ),
    );
    expect(deepInit.status).toBe(400);
    expect(deepInit.headers.get('mcp-session-id')).toBeNull();
    expect(await deepInit.json()).toMatchObject({
      id: 'i1',
      error: { code: -32600, message: expect.stringMatching(NESTING_LIMIT) },
    });
    const init = await post(JSON.stringify(INITIALIZE));
    expect(init.status).toBe(200);
    const sessionId = init.headers.get('mcp-session-id')!;
    await init.text();
    const deepLevel = await post(
      `{"jsonrpc":"2.0","id":"l1","method":"logging/setLevel","params":{"level":"info","x":${deepArray(DEPTH)}}}`,
      sessionId,
    );
    expect(deepLevel.status).toBe(400);
    expect(await deepLevel.json()).toMatchObject({ id: 'l1', error: { code: -32600 } });
    expect(gateway.child.exitCode).toBeNull();
  });
});

describe('issue 13.14: large answers that only look like JSON', () => {
  it('never passes on a line that is not JSON; the call it names fails instead', async () => {
    const peer = await scripted();
    // Starts like a result, ends with the id, is 20 KB long: and is not JSON.
    peer.send(script('big', [`{"result":{${'x'.repeat(20_000)},"id":$ID}`]));
    expect((await peer.response('big')).error).toMatchObject({
      code: -32603,
      message: expect.stringMatching(/not valid JSON/),
    });
    await stillServes(peer);
  });
});

/** Every line taskgate writes to stdout, as text: JSON.parse would round the ids these tests are about. */
function linesOf(peer: RawPeer): Inbox<string> {
  const lines = new Inbox<string>();
  let buffered = '';
  peer.child.stdout.on('data', (chunk: string) => {
    buffered += chunk;
    for (let newline; (newline = buffered.indexOf('\n')) !== -1; buffered = buffered.slice(newline + 1)) {
      lines.push(buffered.slice(0, newline));
    }
  });
  return lines;
}

describe('issue 13.18: ids beyond 2^53', () => {
  it('answers and forwards them with their own digits', async () => {
    const peer = await scripted();
    const lines = linesOf(peer);
    const answerTo = (digits: string): Promise<string> =>
      lines.waitFor(
        (line) => line.includes(`"id":${digits}`) && !line.includes('"method"'),
        `the answer to ${digits}`,
      );
    // Answered by taskgate itself, forwarded to the upstream and back, and refused.
    peer.write('{"jsonrpc":"2.0","id":9007199254740993,"method":"tasks/get","params":{"taskId":"none"}}');
    peer.write(
      '{"jsonrpc":"2.0","id":9007199254740995,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}',
    );
    peer.write('{"jsonrpc":"2.0","id":-12345678901234567890,"method":"ping","params":[1]}');
    expect(JSON.parse(await answerTo('9007199254740993'))).toMatchObject({
      error: { message: expect.stringMatching(/Task not found/) },
    });
    expect(JSON.parse(await answerTo('9007199254740995'))).toMatchObject({
      result: { content: [{ type: 'text', text: 'hi' }] },
    });
    expect(JSON.parse(await answerTo('-12345678901234567890'))).toMatchObject({ error: { code: -32602 } });
    await stillServes(peer);
  });

  it('passes the upstream’s own large ids to the client and its answers back, digit for digit', async () => {
    const peer = await scripted();
    const lines = linesOf(peer);
    const request = '{"jsonrpc":"2.0","id":9007199254740993,"method":"roots/list"}';
    peer.send(script('r1', [request], { arguments: { lines: [request], awaitReply: '9007199254740993' } }));
    const asked = await lines.waitFor((line) => line.includes('"method":"roots/list"'), 'roots/list');
    expect(asked).toContain('"id":9007199254740993');
    peer.write('{"jsonrpc":"2.0","id":9007199254740993,"result":{"roots":[]}}');
    const told = (await peer.response('r1')).result as { content: { text: string }[] };
    expect(told.content[0]!.text).toContain('"id":9007199254740993');
  });

  it('cancels one: the notification reaches the upstream for the request it was given', async () => {
    const peer = await RawPeer.initialized('legacy');
    peers.push(peer);
    peer.write(
      '{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":20000,"label":"large"}}}',
    );
    peer.write(
      '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9007199254740993}}',
    );
    // The fixture notes a cancelled sleep once its abort has run: asked until it has (or 20 times).
    const cancelledSoFar = async (n: number): Promise<string> => {
      const id = `seen-${n}`;
      peer.send({
        jsonrpc: '2.0',
        id,
        method: 'tools/call',
        params: { name: 'cancelled-calls', arguments: {} },
      });
      return ((await peer.response(id)).result as { content: { text: string }[] }).content[0]!.text;
    };
    let seen = '[]';
    for (let n = 0; seen === '[]' && n < 20; n++) seen = await cancelledSoFar(n);
    expect(JSON.parse(seen)).toEqual(['large']);
  });
});

describe('issue 13.15: requests an SDK server drops without a word', () => {
  it('refuses them at once with a clear error, instead of forwarding them to wait for ever', async () => {
    const peer = await RawPeer.initialized('legacy');
    peers.push(peer);
    const echo = (id: string, params: Record<string, unknown>, extra = ''): void =>
      peer.write(
        `{"jsonrpc":"2.0","id":"${id}","method":"tools/call","params":${JSON.stringify({ name: 'echo', arguments: { text: 'x' }, ...params })}${extra}}`,
      );
    echo('member', {}, ',"extra":1');
    echo('meta', { _meta: 5 });
    echo('token', { _meta: { progressToken: { a: 1 } } });
    echo('related', { _meta: { 'io.modelcontextprotocol/related-task': 5 } });
    const answers = await Promise.all(
      ['member', 'meta', 'token', 'related'].map((id) => peer.response(id, 3000)),
    );
    expect(answers.map((answer) => answer.error)).toEqual([
      { code: -32600, message: expect.stringMatching(/unexpected member "extra"/) },
      { code: -32602, message: expect.stringMatching(/"params._meta" of tools\/call must be an object/) },
      { code: -32602, message: expect.stringMatching(/progressToken .* must be a string or an integer/) },
      {
        code: -32602,
        message: expect.stringMatching(/related-task" .* must be an object with a string "taskId"/),
      },
    ]);
    await stillServes(peer);
  });
});
