/** Collects things as they arrive and lets a test wait, with a bound, for one that matches. */
export class Inbox<T> {
  readonly items: T[] = [];
  private waiters: { matches: (item: T) => boolean; resolve: (item: T) => void }[] = [];

  push(item: T): void {
    this.items.push(item);
    this.waiters = this.waiters.filter((waiter) => {
      if (!waiter.matches(item)) return true;
      waiter.resolve(item);
      return false;
    });
  }

  waitFor(matches: (item: T) => boolean, what: string, timeoutMs = 10_000): Promise<T> {
    const found = this.items.find(matches);
    if (found !== undefined) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((waiter) => waiter.resolve !== done);
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`));
      }, timeoutMs);
      const done = (item: T): void => {
        clearTimeout(timer);
        resolve(item);
      };
      this.waiters.push({ matches, resolve: done });
    });
  }
}

/** Each newline-delimited JSON message `stream` carries (a child's stdout in stdio mode), as it arrives. */
export function jsonLines<T>(stream: NodeJS.ReadableStream): Inbox<T> {
  const lines = new Inbox<T>();
  let buffered = '';
  stream.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    for (let end = buffered.indexOf('\n'); end >= 0; end = buffered.indexOf('\n')) {
      lines.push(JSON.parse(buffered.slice(0, end)) as T);
      buffered = buffered.slice(end + 1);
    }
  });
  return lines;
}
