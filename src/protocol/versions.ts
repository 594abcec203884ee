/** The protocol versions taskgate serves, per era, newest first. */
import { MODERN_VERSIONS } from './modern/meta.js';

/** Served after `initialize` (the 2025 era). */
export const LEGACY_VERSIONS: readonly string[] = ['2025-11-25', '2025-06-18', '2025-03-26'];

/** Every version, as `server/discover` lists them and -32022 names them. */
export const ALL_VERSIONS: readonly string[] = [...MODERN_VERSIONS, ...LEGACY_VERSIONS];
