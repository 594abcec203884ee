/** Settings of the modern bridge that are not configurable yet. */
import { createRequire } from 'node:module';
import type { Implementation } from '../protocol/modern/meta.js';
import type { ShareLimits } from './caller-shares.js';

/**
 * How long a call whose server asked for input waits for the client's retry. A person may be answering an
 * elicitation: minutes, not seconds.
 */
export const MODERN_INPUT_WAIT_MS = 10 * 60_000;

const MIB = 1024 * 1024;

/**
 * Calls waiting for input at once, per bridge (each holds an open request upstream), and the bytes of the
 * server's input requests they keep; a tenth of each per caller.
 */
export const MODERN_PARKED_SHARES: ShareLimits = {
  maxEntries: 1_000,
  maxEntriesPerCaller: 100,
  maxBytes: 32 * MIB,
  maxBytesPerCaller: 8 * MIB,
};

/** Open subscriptions/listen streams at once, per bridge, and the bytes of their filters; per caller. */
export const MODERN_LISTEN_SHARES: ShareLimits = {
  maxEntries: 1_000,
  maxEntriesPerCaller: 100,
  maxBytes: 16 * MIB,
  maxBytesPerCaller: 4 * MIB,
};

/**
 * Extension tasks a bridge remembers (`tasks.maxTasks`), and the bytes of their held input and outcomes;
 * a tenth of each per caller. An outcome past the bytes is not kept: it is read again from the store.
 */
export const modernTaskShares = (maxTasks: number): ShareLimits => ({
  maxEntries: maxTasks,
  maxEntriesPerCaller: Math.max(1, Math.floor(maxTasks / 10)),
  maxBytes: 32 * MIB,
  maxBytesPerCaller: 8 * MIB,
});

const { version } = createRequire(import.meta.url)('../../package.json') as { version: string };

/** Who the bridge says it is in the initialize it sends for 2026-07-28 clients. */
export const TASKGATE_INFO: Implementation = { name: 'taskgate', version };
