/**
 * Schemas for the params of the requests taskgate interprets. Only these are validated; everything that
 * is merely forwarded is left to the peer that receives it.
 */
import { z } from 'zod';
import { invalidParams } from '../protocol/errors.js';

const TaskMetadata = z.object({ ttl: z.number().int().nonnegative().optional() }).loose();

export const TaskAugmentedCallParams = z
  .object({
    name: z.string(),
    arguments: z.record(z.string(), z.unknown()).optional(),
    task: TaskMetadata,
  })
  .loose();

export const TaskIdParams = z.object({ taskId: z.string() }).loose();
export const ListTasksParams = z.object({ cursor: z.string().optional() }).loose();

/** Parses params or throws -32602 naming the first problem in words a person can act on. */
export function parseParams<Schema extends z.ZodType>(
  schema: Schema,
  params: unknown,
  method: string,
): z.infer<Schema> {
  const parsed = schema.safeParse(params ?? {});
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const path = issue && issue.path.length > 0 ? issue.path.join('.') : 'params';
  throw invalidParams(`Invalid params for ${method}: ${path}: ${issue?.message ?? 'invalid'}`);
}
