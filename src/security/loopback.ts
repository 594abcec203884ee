const LOOPBACK_HOST = /^(localhost|127(?:\.\d{1,3}){3}|\[::1\])(:\d+)?$/i;

/** Whether a host (a Host header, a URL's host, a listen address), with or without its port, is the loopback. */
export const isLoopbackHost = (host: string): boolean => LOOPBACK_HOST.test(host);
