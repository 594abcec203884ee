/** The part of oidc-provider (which ships no types) that the tests' authorization server uses. */
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  interface ResourceServer {
    scope: string;
    audience: string;
    accessTokenTTL: number;
    accessTokenFormat: 'jwt' | 'opaque';
    jwt?: { sign?: { alg: string } };
  }

  interface Configuration {
    jwks: { keys: object[] };
    clients: object[];
    scopes: string[];
    extraTokenClaims?: (ctx: unknown, token: { clientId?: string }) => object | undefined;
    features: {
      devInteractions?: { enabled: boolean };
      clientCredentials?: { enabled: boolean };
      resourceIndicators?: {
        enabled: boolean;
        defaultResource?: (ctx: unknown) => string | undefined;
        useGrantedResource?: () => boolean;
        getResourceServerInfo: (ctx: unknown, resource: string) => ResourceServer;
      };
    };
  }

  export default class Provider {
    constructor(issuer: string, configuration: Configuration);
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
    /** An extension grant at the token endpoint: its handler, parameters, and those that may repeat. */
    registerGrantType(
      name: string,
      handler: (ctx: never) => Promise<void>,
      parameters?: string[],
      duplicates?: string[],
    ): void;
    on(event: 'grant.success', listener: (ctx: never) => void): this;
  }
}
