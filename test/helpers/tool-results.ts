/** Reading tool results, and waiting on what a fixture records, in tests of any era. */

/** The text of a tool result's first content, which must be text. */
export function textOf(result: object): string {
  const content: unknown = 'content' in result ? result.content : undefined;
  const first: unknown = Array.isArray(content) ? content[0] : undefined;
  if (typeof first !== 'object' || first === null || !('text' in first) || typeof first.text !== 'string') {
    throw new Error(`not a text result: ${JSON.stringify(result)}`);
  }
  return first.text;
}

type CallTool = (params: { name: string; arguments: Record<string, unknown> }) => Promise<object>;

/**
 * Resolves once the server (a fixture with `cancelled-calls`) lists `label` among its cancelled calls,
 * asking every 20 ms; fails after 5 s. Nothing answers a cancellation (a notification on stdio, a closed
 * stream over HTTP), so the test asks.
 */
export async function untilCancelledOnServer(callTool: CallTool, label: string): Promise<void> {
  const deadline = Date.now() + 5_000;
  const cancelled = async () =>
    (JSON.parse(textOf(await callTool({ name: 'cancelled-calls', arguments: {} }))) as string[]).includes(
      label,
    );
  while (!(await cancelled())) {
    if (Date.now() > deadline) throw new Error(`the server did not record ${label} as cancelled within 5 s`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
