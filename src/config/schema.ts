/**
 * Every setting of taskgate, in one schema: flags, environment and config file all end up here, and
 * nothing else decides a default.
 */
import { z } from 'zod';

const MS_PER_DAY = 86_400_000;
const MIB = 1024 * 1024;

const milliseconds = (max: number) => z.number().int().positive().max(max);

export const TASK_SUPPORT_VALUES = ['required', 'optional', 'forbidden'] as const;
export type TaskSupport = (typeof TASK_SUPPORT_VALUES)[number];

export const ToolRuleSchema = z
  .object({
    /** Tool-name glob: `*` matches any run of characters, `?` one character. */
    match: z.string().min(1),
    taskSupport: z.enum(TASK_SUPPORT_VALUES).optional(),
    ttl: milliseconds(30 * MS_PER_DAY).optional(),
    maxTtl: milliseconds(30 * MS_PER_DAY).optional(),
    pollInterval: milliseconds(MS_PER_DAY).optional(),
    immediateResponse: z.string().optional(),
  })
  .strict();
export type ToolRule = z.infer<typeof ToolRuleSchema>;

export const UpstreamCommandSchema = z
  .object({
    command: z.string().min(1),
    args: z.array(z.string()).default([]),
    env: z.record(z.string(), z.string()).optional(),
    cwd: z.string().optional(),
  })
  .strict();

export const ConfigSchema = z
  .object({
    upstream: UpstreamCommandSchema.optional(),
    logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    /** Largest single JSON-RPC message taskgate accepts on any connection. */
    maxMessageBytes: z
      .number()
      .int()
      .min(64 * 1024)
      .max(1024 * MIB)
      .default(32 * MIB),
    tasks: z
      .object({
        defaultTtl: milliseconds(30 * MS_PER_DAY).default(3_600_000),
        maxTtl: milliseconds(30 * MS_PER_DAY).default(MS_PER_DAY),
        pollInterval: milliseconds(MS_PER_DAY).default(1_000),
        maxTasks: z.number().int().positive().default(10_000),
        maxResultBytes: z
          .number()
          .int()
          .positive()
          .default(256 * MIB),
        statusNotifications: z.boolean().default(true),
        /**
         * Serve and advertise tasks/list although tasks are not bound to an identity. The spec advises
         * against it: anyone on the connection can then list every task of that connection.
         */
        exposeList: z.boolean().default(false),
        listPageSize: z.number().int().positive().max(1000).default(100),
      })
      .strict()
      .prefault({}),
    tools: z.array(ToolRuleSchema).default([]),
  })
  .strict();

export type Config = z.infer<typeof ConfigSchema>;
export type ConfigInput = z.input<typeof ConfigSchema>;
