/**
 * How a task record read back from Redis is decoded (src/tasks/redis-codec.ts): a result kept as bytes stays
 * bytes, and a small one is not a view of the reply parser's read.
 */
import { describe, expect, it } from 'vitest';
import { decode } from '../../src/tasks/redis-codec.js';
import { RECORD_FIELDS } from '../../src/tasks/redis-scripts.js';

const FIELDS: Record<(typeof RECORD_FIELDS)[number], string | null> = {
  id: 't1',
  status: 'completed',
  message: null,
  created: '1',
  updated: '2',
  ttl: '60000',
  poll: '1000',
  owner: 'o',
  identity: null,
  session: 's',
  tool: 'echo',
  bytes: '20',
  pos: '7',
  expires: '0',
  trace: null,
  server: null,
};

describe('a record read back from Redis', () => {
  it('keeps a small result kept as bytes as its own copy, not a view holding the whole read it lay in', () => {
    const read = Buffer.alloc(64 * 1024, 0x20);
    const stored = '{"bytes":{"content":[]}}';
    const at = read.write(stored, 1000);
    const { record } = decode([...RECORD_FIELDS.map((name) => FIELDS[name]), read.subarray(1000, 1000 + at)]);
    expect(Buffer.isBuffer(record.resultBytes)).toBe(true);
    const bytes = record.resultBytes as Buffer;
    expect(bytes.toString()).toBe('{"content":[]}');
    expect(bytes.buffer).not.toBe(read.buffer);
  });

  it('keeps a big result as a view of the read: it is most of it', () => {
    const result = `{"content":[{"type":"text","text":"${'x'.repeat(60_000)}"}]}`;
    const read = Buffer.from(`{"bytes":${result}}`);
    const { record } = decode([...RECORD_FIELDS.map((name) => FIELDS[name]), read]);
    const bytes = record.resultBytes as Buffer;
    expect(bytes.toString()).toBe(result);
    expect(bytes.buffer).toBe(read.buffer);
  });
});
