import { randomUUID } from 'node:crypto';

/** A version 4 UUID from the CSPRNG: 122 random bits, the entropy the spec asks of unbound task ids. */
export const newTaskId = (): string => randomUUID();
