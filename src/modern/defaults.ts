/** Settings of the modern bridge that are not configurable yet. */
import { createRequire } from 'node:module';
import type { Implementation } from '../protocol/modern/meta.js';

/**
 * How long a call whose server asked for input waits for the client's retry. A person may be answering an
 * elicitation: minutes, not seconds.
 */
export const MODERN_INPUT_WAIT_MS = 10 * 60_000;

/** Calls waiting for input at once, per bridge: each holds an open request upstream. */
export const MODERN_MAX_PARKED = 1_000;

/** Open subscriptions/listen streams at once, per bridge. */
export const MODERN_MAX_LISTENERS = 1_000;

const { version } = createRequire(import.meta.url)('../../package.json') as { version: string };

/** Who the bridge says it is in the initialize it sends for 2026-07-28 clients. */
export const TASKGATE_INFO: Implementation = { name: 'taskgate', version };
