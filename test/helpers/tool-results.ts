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

/** Resolves once `check` is true, asking again every 20 ms; fails after `withinMs`. */
export async function until(check: () => Promise<boolean>, what: string, withinMs = 5_000): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not within ${withinMs} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * Resolves once the server (a fixture with `cancelled-calls`) lists `label` among its cancelled calls; fails
 * after 5 s. Nothing answers a cancellation (a notification on stdio, a closed stream over HTTP), so the
 * test asks.
 */
export function untilCancelledOnServer(callTool: CallTool, label: string): Promise<void> {
  return until(
    async () =>
      (JSON.parse(textOf(await callTool({ name: 'cancelled-calls', arguments: {} }))) as string[]).includes(
        label,
      ),
    `the server records ${label} as cancelled`,
  );
}
