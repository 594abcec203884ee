/**
 * Turns telemetry on for the process when the config or the environment asks for it; otherwise loads
 * nothing (sdk.ts and OpenTelemetry with it are imported only here, only then).
 */
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import { telemetrySettings } from './settings.js';
import { NO_TELEMETRY, install, type Telemetry } from './telemetry.js';

export async function startTelemetry(config: Config, logger: Logger): Promise<Telemetry> {
  const settings = telemetrySettings(config, process.env);
  if (settings === undefined) return NO_TELEMETRY;
  const { openTelemetry } = await import('./sdk.js');
  const active = await openTelemetry(settings, logger);
  install(active);
  return active;
}
