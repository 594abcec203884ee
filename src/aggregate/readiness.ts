/**
 * /readyz for several servers: each server by name with its state, ready while one of them is. Over
 * stdio the states are those of the one aggregator's servers; over the HTTP front, where each session
 * starts servers of its own, whether each could be started (or reached) now.
 */

export interface ServerReadiness {
  /**
   * starting: not opened yet; ready: serving (over HTTP: could be started now); joining: it has not
   * answered initialize yet; refused: it refused initialize; gone: it crashed and was not restarted, or
   * could not be started; unavailable (HTTP): it cannot be started or reached now.
   */
  state: 'starting' | 'ready' | 'joining' | 'refused' | 'gone' | 'unavailable';
  cause?: string;
}

export type ServersReadiness = Record<string, ServerReadiness>;

export interface Readiness {
  /** Why no server is ready (each named with its cause); undefined when one is. */
  notReady(): Promise<string | undefined>;
  servers(): Promise<ServersReadiness>;
}

/** The readiness of `probe`'s states; a probe under way is shared by whoever asks meanwhile. */
export function readinessOf(probe: () => ServersReadiness | Promise<ServersReadiness>): Readiness {
  let asked: Promise<ServersReadiness> | undefined;
  const servers = (): Promise<ServersReadiness> =>
    (asked ??= Promise.resolve(probe()).finally(() => (asked = undefined)));
  return {
    servers,
    notReady: async () => {
      const states = Object.entries(await servers());
      if (states.some(([, { state }]) => state === 'ready')) return undefined;
      return states.map(([name, { state, cause }]) => `server "${name}": ${cause ?? state}`).join('; ');
    },
  };
}
