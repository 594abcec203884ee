/**
 * The calls every 2026-07-28 client test makes, whatever stands between the SDK v2 client and the server
 * (nothing, or taskgate in front of a 2025 or a 2026-07-28 server): registered into the caller's describe.
 * The server is one of the fixtures with the shared tools (echo, slow, elicit, fail, cancelled-calls),
 * fixture://hello and greet; its elicitation handler answers {answer: 'forty-two'} and records what it was
 * asked in `elicitations`.
 */
import { expect, it } from 'vitest';
import type { ElicitRequest, Progress } from '@modelcontextprotocol/client';
import { Inbox } from './inbox.js';
import type { ModernConnection } from './modern-client.js';
import { textOf, untilCancelledOnServer } from './tool-results.js';

export interface ModernTarget {
  connection: () => ModernConnection;
  elicitations: ElicitRequest['params'][];
  serverName: string;
  /** Names this target's cancelled call on the server, which all targets share. */
  label: string;
}

export function modernCallCases(target: ModernTarget): void {
  const client = () => target.connection().client;

  it("echo returns its text, with the server's identity in the result _meta", async () => {
    const result = await client().callTool({ name: 'echo', arguments: { text: 'hi' } });
    expect(textOf(result)).toBe('hi');
    expect(result._meta?.['io.modelcontextprotocol/serverInfo']).toMatchObject({ name: target.serverName });
  });

  it('delivers progress to the call that asked for it, in order', async () => {
    const progress = new Inbox<Progress>();
    const abort = new AbortController();
    const call = client().callTool(
      { name: 'slow', arguments: { ms: 60_000 } },
      { signal: abort.signal, onprogress: (update) => progress.push(update) },
    );
    await progress.waitFor(() => progress.items.length === 3, 'three progress notifications');
    abort.abort('enough progress');
    await expect(call).rejects.toThrow('enough progress');
    const [first, second, third] = progress.items;
    expect(first).toEqual({ progress: 0, total: 60_000 });
    expect(second!.progress).toBeGreaterThan(first!.progress);
    expect(third!.progress).toBeGreaterThan(second!.progress);
  });

  it("answers the server's elicitation through MRTR: input_required, the client's handler, its retry", async () => {
    const before = target.elicitations.length;
    const result = await client().callTool({
      name: 'elicit',
      arguments: { message: 'What is the answer?' },
    });
    expect(result.isError).toBeFalsy();
    expect(JSON.parse(textOf(result))).toEqual({ action: 'accept', content: { answer: 'forty-two' } });
    expect(target.elicitations.slice(before)).toEqual([
      expect.objectContaining({ mode: 'form', message: 'What is the answer?' }),
    ]);
  });

  it('fail is an isError result, not an error', async () => {
    const result = await client().callTool({ name: 'fail', arguments: { message: 'nope' } });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toBe('nope');
  });

  it('serves the resource fixture://hello and the prompt greet', async () => {
    const { resources } = await client().listResources();
    expect(resources.map((resource) => resource.uri)).toEqual(['fixture://hello']);
    const { contents } = await client().readResource({ uri: 'fixture://hello' });
    expect(contents).toEqual([
      { uri: 'fixture://hello', mimeType: 'text/plain', text: 'hello from fixture' },
    ]);
    const { messages } = await client().getPrompt({ name: 'greet', arguments: { name: 'Ada' } });
    expect(messages).toEqual([{ role: 'user', content: { type: 'text', text: 'Hello, Ada!' } }]);
  });

  it('cancelling a running call stops it on the server (stdio: notifications/cancelled; HTTP: the stream closes)', async () => {
    const label = `cancel-${target.label}`;
    const abort = new AbortController();
    const call = client().callTool(
      { name: 'slow', arguments: { ms: 30_000, label } },
      { signal: abort.signal, onprogress: () => abort.abort('the test cancels') },
    );
    await expect(call).rejects.toThrow('the test cancels');
    await untilCancelledOnServer((params) => client().callTool(params), label);
  });
}
