/** Units and bounds the config schemas share. */
import { z } from 'zod';

export const MS_PER_DAY = 86_400_000;
export const MIB = 1024 * 1024;
/** Node's timers overflow at 2^31 ms: any setting that arms a timer stays below. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

export const milliseconds = (max: number) => z.number().int().positive().max(max);
