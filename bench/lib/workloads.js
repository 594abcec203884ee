// @ts-check
/** The workloads an SDK Client runs against every target. */
import { CallToolResultSchema, CreateTaskResultSchema } from '../sdk.js';
import { pipelined } from './stats.js';

/** @typedef {import('../sdk.js').Client} Client */

/** @param {Client} client @param {string} name @param {Record<string, unknown>} args */
export const call = (client, name, args) =>
  client.request({ method: 'tools/call', params: { name, arguments: args } }, CallToolResultSchema);

/** Checks that the target answers as the fixture does, so that no figure is of a broken path. @param {Client} client @param {number} blobBytes */
export async function check(client, blobBytes) {
  const echo = await call(client, 'echo', { text: 'ping' });
  const text = /** @type {{ text?: string }} */ (echo.content[0])?.text;
  if (text !== 'ping') throw new Error(`echo answered ${JSON.stringify(echo)}`);
  const blob = await call(client, 'large', { bytes: blobBytes });
  const length = /** @type {{ text?: string }} */ (blob.content[0])?.text?.length;
  if (length !== blobBytes) throw new Error(`large answered ${length} characters, not ${blobBytes}`);
}

/** One small call; resolves with its latency (ms). @param {Client} client */
export async function timedCall(client) {
  const start = performance.now();
  await call(client, 'echo', { text: 'ping' });
  return performance.now() - start;
}

/** Sequential small calls; pushes each latency (ms). @param {Client} client @param {number} count @param {number[]} into */
export async function latency(client, count, into) {
  for (let i = 0; i < count; i++) into.push(await timedCall(client));
}

/**
 * `count` small calls with `inFlight` outstanding; resolves with the seconds taken.
 * @param {Client} client @param {number} count @param {number} inFlight
 */
export async function throughput(client, count, inFlight) {
  const start = performance.now();
  await pipelined(count, inFlight, () => call(client, 'echo', { text: 'ping' }));
  return (performance.now() - start) / 1000;
}

/** `count` sequential calls returning `bytes` characters each; resolves with the seconds taken. @param {Client} client @param {number} count @param {number} bytes */
export async function blobs(client, count, bytes) {
  const start = performance.now();
  for (let i = 0; i < count; i++) await call(client, 'large', { bytes });
  return (performance.now() - start) / 1000;
}

/**
 * `count` sequential task-augmented calls returning `bytes` characters each, each's tasks/result asked at
 * once (taskgate holds the task: the fixture knows no tasks); resolves with the seconds taken.
 * @param {Client} client @param {number} count @param {number} bytes
 */
export async function taskBlobs(client, count, bytes) {
  const start = performance.now();
  for (let i = 0; i < count; i++) {
    const { task } = await client.request(
      { method: 'tools/call', params: { name: 'large', arguments: { bytes }, task: {} } },
      CreateTaskResultSchema,
    );
    const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    const length = /** @type {{ text?: string }} */ (result.content[0])?.text?.length;
    if (length !== bytes) throw new Error(`tasks/result gave ${length} characters, not ${bytes}`);
  }
  return (performance.now() - start) / 1000;
}

/**
 * One task-augmented echo (a zero-work tool), then tasks/result at once; resolves with the create →
 * result time (ms).
 * @param {Client} client
 */
export async function timedTask(client) {
  const start = performance.now();
  const { task } = await client.request(
    { method: 'tools/call', params: { name: 'echo', arguments: { text: 'ping' }, task: {} } },
    CreateTaskResultSchema,
  );
  await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
  return performance.now() - start;
}
