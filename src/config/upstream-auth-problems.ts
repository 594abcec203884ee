/**
 * upstream.auth replaces pass-through, and a token exchange starts from the caller's validated token, on a
 * connection of the caller's own.
 */
export function upstreamAuthProblems(
  auth: { oauth?: { bearerPassthrough: boolean } | undefined; bearerPassthrough?: object | undefined },
  upstream: { auth?: { tokenExchange?: object | undefined } | undefined; sharing: string } | undefined,
): { path: (string | number)[]; message: string }[] {
  if (upstream?.auth === undefined) return [];
  if (auth.oauth?.bearerPassthrough === true || auth.bearerPassthrough !== undefined) {
    return [
      {
        path: ['upstream', 'auth'],
        message: "choose one: bearer pass-through (the caller's own token upstream) or upstream.auth",
      },
    ];
  }
  if (upstream.auth.tokenExchange === undefined) return [];
  const path = ['upstream', 'auth', 'tokenExchange'];
  if (auth.oauth === undefined) {
    return [{ path, message: "needs auth.oauth: the caller's validated access token is what is exchanged" }];
  }
  if (upstream.sharing !== 'session') {
    return [
      {
        path,
        message: `needs upstream.sharing: session (a ${upstream.sharing} upstream serves several callers on one connection)`,
      },
    ];
  }
  return [];
}
