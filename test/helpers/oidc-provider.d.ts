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
    findAccount?: (ctx: unknown, id: string) => { accountId: string; claims: () => object };
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
      /** RFC 7662: who may learn what of a token (the authenticated client, the token). */
      introspection?: {
        enabled: boolean;
        allowedPolicy?: (ctx: unknown, client: { clientId: string }, token: { clientId: string }) => boolean;
      };
      /** RFC 7009: who may revoke a token. */
      revocation?: {
        enabled: boolean;
        allowedPolicy?: (ctx: unknown, client: { clientId: string }, token: { clientId: string }) => boolean;
      };
    };
  }

  interface Interaction {
    prompt: {
      name: 'login' | 'consent';
      details: { missingOIDCScope?: string[]; missingResourceScopes?: Record<string, string[]> };
    };
    params: Record<string, unknown>;
    session?: { accountId: string };
  }

  class Grant {
    constructor(init: { accountId: string; clientId: string });
    addOIDCScope(scope: string): void;
    addResourceScope(resource: string, scope: string): void;
    save(): Promise<string>;
  }

  export default class Provider {
    Grant: typeof Grant;
    interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<Interaction>;
    interactionFinished(
      req: IncomingMessage,
      res: ServerResponse,
      result: object,
      options: { mergeWithLastSubmission: boolean },
    ): Promise<void>;
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
