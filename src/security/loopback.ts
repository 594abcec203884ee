const LOOPBACK_HOST = /^(localhost|127(?:\.\d{1,3}){3}|\[::1\])(:\d+)?$/i;

/** Whether a host (a Host header, a URL's host, a listen address), with or without its port, is the loopback. */
export const isLoopbackHost = (host: string): boolean => LOOPBACK_HOST.test(host);

/**
 * DNS rebinding protection: a browser's Origin must be allowed (or be the loopback), and on a loopback
 * listener the Host must name the loopback too (a rebound name would not).
 */
export function trustedOrigin(
  headers: { origin?: string | undefined; host?: string | undefined },
  allowedOrigins: readonly string[],
  listenerHost: string,
): boolean {
  const { origin } = headers;
  if (origin !== undefined && !allowedOrigins.includes(origin)) {
    let host: string;
    try {
      host = new URL(origin).host;
    } catch {
      return false;
    }
    if (!isLoopbackHost(host)) return false;
  }
  return !isLoopbackHost(listenerHost) || isLoopbackHost(headers.host ?? '');
}
