/**
 * Per-caller limits (an identity, or a session without one), so that one caller cannot starve the others:
 * `limits`, and a server's own in `upstreams`. A rate and its burst are one token bucket.
 */
import { z } from 'zod';

export const LimitsSchema = z
  .object({
    maxLiveTasks: z.number().int().positive().optional(),
    /** Task-augmented calls a caller may start per second, with bursts up to `taskCreationBurst`. */
    taskCreationRate: z.number().positive().optional(),
    taskCreationBurst: z.number().int().positive().optional(),
    /** tasks/get, tasks/result, tasks/list and tasks/cancel per second, with bursts. */
    taskRequestRate: z.number().positive().optional(),
    taskRequestBurst: z.number().int().positive().optional(),
  })
  .strict();
export type LimitsSettings = z.infer<typeof LimitsSchema>;
