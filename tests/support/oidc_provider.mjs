// A real authorization server for the OAuth tests: panva's oidc-provider (OpenID certified), with resource
// indicators (RFC 8707) issuing JWT access tokens (RFC 9068) for the resource asked for, client credentials,
// dynamic registration, introspection and revocation. It listens on a free loopback port and prints one
// line of JSON, `{"issuer": ...}`, once it does.
//
// Beside the provider's own routes, the tests reach a few of their own under /test, for what no honest
// authorization server does: tokens signed by keys it does not publish, or not signed at all; a key
// published later (rotation); a key set that is down or slow; opaque tokens rather than JWTs, and an
// introspection endpoint or a token endpoint that is down; access tokens that live a few seconds; how often its key set
// was fetched, a person signed in, a token was refreshed, or a client asked for one of its own; the refresh tokens it
// issued, and their revocation; and the exchange of its access tokens for others (RFC 8693), counted.
//
// A person signs in through the provider's own development login and consent pages (any login name,
// any password), which a headless client fills in as a browser would.
//
// Usage: node oidc_provider.mjs <resource URL> [<resource URL>...]

import http from 'node:http';
import { createPublicKey, randomUUID } from 'node:crypto';
import Provider from 'oidc-provider';
import { SignJWT, exportJWK, exportSPKI, generateKeyPair, jwtVerify } from 'jose';

const resources = process.argv.slice(2);
if (resources.length === 0) {
  console.error('usage: node oidc_provider.mjs <resource URL>...');
  process.exit(2);
}

async function key(kid) {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk = { ...(await exportJWK(privateKey)), kid, alg: 'RS256', use: 'sig' };
  return { privateKey, jwk };
}

const current = await key('current');
const next = await key('next');
const stranger = await key('stranger');
const publicJwk = ({ d, p, q, dp, dq, qi, ...rest }) => rest;

const state = {
  jwks: 'up', publishNext: false, jwksFetches: 0, introspections: 0, format: 'jwt', introspection: 'up', ttl: 600,
  authorizations: 0, refreshes: 0, clientCredentials: 0, tokenEndpoint: 'up', exchanges: 0,
  // Every refresh token issued, so that a test can find one where it must not be, or revoke them all.
  refreshTokens: [],
};

const server = http.createServer();
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, {
  jwks: { keys: [current.jwk] },
  clients: [
    {
      client_id: 'back-office',
      client_secret: 'back-office-secret',
      grant_types: ['client_credentials', 'urn:ietf:params:oauth:grant-type:token-exchange'],
      redirect_uris: [],
      response_types: [],
      scope: 'orders:read orders:write',
    },
    {
      // The resource server itself, a client for introspection only.
      client_id: 'orders-api',
      client_secret: 'orders-api-secret',
      grant_types: [],
      redirect_uris: [],
      response_types: [],
    },
  ],
  scopes: ['openid', 'offline_access', 'orders:read', 'orders:write'],
  // Every client that may refresh gets a refresh token, as the MCP hosts expect, not only those asking for
  // `offline_access`.
  issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
  features: {
    clientCredentials: { enabled: true },
    introspection: { enabled: true },
    revocation: { enabled: true },
    registration: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => resources[0],
      useGrantedResource: () => true,
      getResourceServerInfo: (_ctx, resource) => ({
        scope: 'orders:read orders:write',
        audience: resource,
        accessTokenTTL: state.ttl,
        accessTokenFormat: state.format,
        jwt: { sign: { alg: 'RS256' } },
      }),
    },
  },
});

// Token exchange (RFC 8693), as a gateway asks for a token of a caller's own for a server behind it: the
// subject token must be one of this provider's access tokens, still valid; the token given keeps its
// subject and those of its scopes asked for, is for the resource asked for, and names the client that
// asked as its actor (`act`).
const ACCESS_TOKEN = 'urn:ietf:params:oauth:token-type:access_token';
provider.registerGrantType('urn:ietf:params:oauth:grant-type:token-exchange', async (ctx) => {
  const { subject_token: subject, subject_token_type: type, resource, scope } = ctx.oidc.params;
  const refuse = (error, description) => {
    ctx.status = 400;
    ctx.body = { error, error_description: description };
  };
  if (type !== ACCESS_TOKEN || !subject || !resource) return refuse('invalid_request', 'an access token and a resource');
  let claims;
  try {
    ({ payload: claims } = await jwtVerify(subject, createPublicKey({ key: current.jwk, format: 'jwk' }), { issuer }));
  } catch (error) {
    return refuse('invalid_grant', `the subject token is not one of ours: ${error.code}`);
  }
  state.exchanges += 1;
  const held = (claims.scope || '').split(' ').filter(Boolean);
  const asked = scope ? scope.split(' ') : held;
  const client = ctx.oidc.client.clientId;
  const now = Math.floor(Date.now() / 1000);
  const token = await new SignJWT({
    sub: claims.sub, scope: asked.filter((s) => held.includes(s)).join(' '), client_id: client, act: { sub: client },
  })
    .setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', kid: current.jwk.kid })
    .setIssuer(issuer).setAudience(resource).setIssuedAt(now).setExpirationTime(now + state.ttl).setJti(randomUUID())
    .sign(current.privateKey);
  ctx.body = { access_token: token, issued_token_type: ACCESS_TOKEN, token_type: 'Bearer', expires_in: state.ttl };
}, ['subject_token', 'subject_token_type', 'requested_token_type', 'resource', 'scope', 'audience']);

async function body(ctx) {
  const chunks = [];
  for await (const chunk of ctx.req) chunks.push(chunk);
  return JSON.parse(Buffer.concat(chunks).toString() || '{}');
}

const b64url = (value) => Buffer.from(JSON.stringify(value)).toString('base64url');

async function mint({ signer, claims, header = {} }) {
  const now = Math.floor(Date.now() / 1000);
  const payload = { iss: issuer, sub: 'rita', aud: resources[0], iat: now, exp: now + 600, ...claims };
  for (const [name, value] of Object.entries(payload)) if (value === null) delete payload[name];
  const sign = (k) =>
    new SignJWT(payload).setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', kid: k.jwk.kid, ...header }).sign(k.privateKey);
  switch (signer) {
    case 'current':
      return sign(current);
    case 'next':
      return sign(next);
    case 'stranger':
      return sign(stranger);
    case 'none':
      return `${b64url({ alg: 'none', typ: 'at+jwt', kid: 'current' })}.${b64url(payload)}.`;
    case 'hs256-with-public-key': {
      // The confusion attack: an HMAC keyed by the issuer's public key, which anyone can read.
      const pem = await exportSPKI(createPublicKey({ key: current.jwk, format: 'jwk' }));
      return new SignJWT(payload)
        .setProtectedHeader({ alg: 'HS256', typ: 'at+jwt', kid: 'current' })
        .sign(new TextEncoder().encode(pem));
    }
    default:
      throw new Error(`no signer ${signer}`);
  }
}

provider.use(async (ctx, nextMiddleware) => {
  if (ctx.path === '/test/mint' && ctx.method === 'POST') {
    ctx.body = { token: await mint(await body(ctx)) };
    return;
  }
  if (ctx.path === '/test/keys' && ctx.method === 'POST') {
    const asked = await body(ctx);
    if (asked.jwks) state.jwks = asked.jwks;
    if (asked.publishNext !== undefined) state.publishNext = asked.publishNext;
    ctx.body = state;
    return;
  }
  if (ctx.path === '/test/tokens' && ctx.method === 'POST') {
    const asked = await body(ctx);
    if (asked.format) state.format = asked.format;
    if (asked.introspection) state.introspection = asked.introspection;
    if (asked.ttl) state.ttl = asked.ttl;
    if (asked.tokenEndpoint) state.tokenEndpoint = asked.tokenEndpoint;
    ctx.body = state;
    return;
  }
  if (ctx.path === '/test/revoke-refreshes' && ctx.method === 'POST') {
    for (const value of state.refreshTokens) {
      const token = await provider.RefreshToken.find(value);
      if (token) await token.destroy();
    }
    ctx.body = { revoked: state.refreshTokens.length };
    return;
  }
  if (ctx.path === '/reg' && ctx.method === 'POST') {
    // A client registers with the scope it was first asked for; it may ask for any of the resource's
    // later (a step-up), as with most providers, so the registration keeps no scope to hold it to.
    const { scope: _, ...metadata } = await body(ctx);
    ctx.request.body = metadata;
  }
  if (ctx.path === '/token' && state.tokenEndpoint === 'down') {
    ctx.status = 503;
    ctx.body = 'down';
    return;
  }
  if (ctx.path === '/token/introspection') state.introspections += 1;
  if (ctx.path === '/token/introspection' && state.introspection === 'down') {
    ctx.status = 503;
    ctx.body = 'down';
    return;
  }
  if (ctx.path === '/token/introspection' && state.introspection === 'slow') {
    await new Promise((resolve) => setTimeout(resolve, 30_000));
  }
  if (ctx.path === '/test/stats') {
    ctx.body = {
      jwks_fetches: state.jwksFetches, introspections: state.introspections,
      authorizations: state.authorizations, refreshes: state.refreshes,
      client_credentials: state.clientCredentials, refresh_tokens: state.refreshTokens, exchanges: state.exchanges,
    };
    return;
  }
  if (ctx.path === '/jwks') {
    state.jwksFetches += 1;
    if (state.jwks === 'down') {
      ctx.status = 503;
      ctx.body = 'down';
      return;
    }
    if (state.jwks === 'slow') {
      await new Promise((resolve) => setTimeout(resolve, 30_000));
    }
  }
  await nextMiddleware();
  if (ctx.path === '/jwks' && state.publishNext && ctx.status === 200) {
    const document = typeof ctx.body === 'string' ? JSON.parse(ctx.body) : ctx.body;
    document.keys.push(publicJwk(next.jwk));
    ctx.body = document;
  }
});

provider.on('authorization.success', () => {
  state.authorizations += 1;
});
provider.on('grant.success', (ctx) => {
  if (ctx.oidc.params.grant_type === 'refresh_token') state.refreshes += 1;
  if (ctx.oidc.params.grant_type === 'client_credentials') state.clientCredentials += 1;
});

provider.on('refresh_token.saved', (token) => {
  state.refreshTokens.push(token.jti);
});

server.on('request', provider.callback());
process.stdout.write(`${JSON.stringify({ issuer })}\n`);
