// @ts-check
/**
 * Preloaded into supergateway (`node --import ./bench/loopback.js ...`), which has no option for the
 * address it binds and listens on every interface: a listen() given a port and no host binds 127.0.0.1
 * instead, so that nothing the bench starts is reachable from outside the machine. The request path is
 * untouched.
 */
import net from 'node:net';

const listen = net.Server.prototype.listen;
/** @param {...any} args */
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === 'number' && typeof args[1] !== 'string') args.splice(1, 0, '127.0.0.1');
  else if (
    typeof args[0] === 'object' &&
    args[0] !== null &&
    args[0].host === undefined &&
    args[0].path === undefined
  )
    args[0] = { ...args[0], host: '127.0.0.1' };
  return listen.apply(this, /** @type {any} */ (args));
};
