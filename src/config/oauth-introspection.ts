/**
 * `auth.oauth.introspection`: opaque access tokens judged by the authorization server itself (RFC 7662),
 * taskgate authenticating as a client of it. Its own module so that schema.ts stays one screenful per part.
 */
import { z } from 'zod';
import { MAX_TIMER_MS } from './units.js';

export const IntrospectionSchema = z
  .object({
    /** The introspection endpoint; the issuer metadata's `introspection_endpoint` unless set. */
    endpoint: z.url({ protocol: /^https?$/ }).optional(),
    /** taskgate's client id and secret at the authorization server (introspection requires client auth). */
    clientId: z.string().min(1),
    clientSecret: z.string().min(1),
    /**
     * How taskgate authenticates: as the metadata allows (`introspection_endpoint_auth_methods_supported`,
     * else `token_endpoint_auth_methods_supported`; basic preferred) unless set.
     */
    authMethod: z.enum(['client_secret_basic', 'client_secret_post']).optional(),
    /** Which tokens are introspected: those that are not JWTs (JWTs are checked against the keys), or all. */
    tokens: z.enum(['opaque', 'all']).default('opaque'),
    /** Active answers kept (least recently used dropped first), each until its token's `exp`; 0: none kept. */
    cacheMax: z.number().int().nonnegative().max(1_000_000).default(10_000),
    /** An active answer is kept no longer than this either: how late a revocation may be noticed. */
    cacheMaxAge: z.number().int().positive().max(MAX_TIMER_MS).optional(),
  })
  .strict();
export type IntrospectionConfig = z.infer<typeof IntrospectionSchema>;
