/**
 * A fake OIDC identity provider for tests: a loopback node:http server serving a discovery
 * document, a JWKS (ES256 and RS256 keys from jose), a redirect to the JWKS, and counting every
 * JWKS fetch. `token()` signs upstream tokens with any of its keys.
 */
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type CryptoKey, type JWK, SignJWT, exportJWK, generateKeyPair } from 'jose';

export interface FakeIdp {
  readonly url: string;
  readonly issuer: string;
  readonly jwksUrl: string;
  readonly discoveryUrl: string;
  /** A path that answers 302 to the JWKS. */
  readonly redirectUrl: string;
  jwksFetches: number;
  /** Signs a token; `alg` picks the key, `kid` overrides the header (an unknown key). */
  token(claims: Record<string, unknown>, opts?: FakeTokenOptions): Promise<string>;
  /** A fresh key that the JWKS will list from now on (rotation). */
  rotate(): Promise<string>;
  close(): Promise<void>;
}

export interface FakeTokenOptions {
  alg?: 'ES256' | 'RS256' | 'ES384';
  kid?: string;
  expiresInS?: number;
  audience?: string;
  issuer?: string;
}

interface Key {
  kid: string;
  alg: string;
  privateKey: CryptoKey;
  jwk: JWK;
}

async function makeKey(alg: string, kid: string): Promise<Key> {
  const { publicKey, privateKey } = await generateKeyPair(alg, { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' };
  return { kid, alg, privateKey, jwk };
}

export async function startFakeIdp(opts: { audience?: string } = {}): Promise<FakeIdp> {
  const keys: Key[] = [await makeKey('ES256', 'es-1'), await makeKey('RS256', 'rs-1')];
  // ES384 is signed with but never listed unless rotated in, and is off the default allow-list.
  const extra = await makeKey('ES384', 'es384-1');
  keys.push(extra);
  let server: Server | undefined;
  const state = { jwksFetches: 0 };
  server = createServer((req, res) => {
    const json = (body: unknown) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.url === '/jwks.json') {
      state.jwksFetches++;
      json({ keys: keys.map((k) => k.jwk) });
    } else if (req.url === '/.well-known/openid-configuration') {
      json({ issuer: idp.issuer, jwks_uri: idp.jwksUrl });
    } else if (req.url === '/redirect') {
      res.writeHead(302, { location: '/jwks.json' });
      res.end();
    } else {
      res.writeHead(404);
      res.end();
    }
  });
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;
  const idp: FakeIdp = {
    url,
    issuer: `${url}/`,
    jwksUrl: `${url}/jwks.json`,
    discoveryUrl: `${url}/.well-known/openid-configuration`,
    redirectUrl: `${url}/redirect`,
    get jwksFetches() {
      return state.jwksFetches;
    },
    set jwksFetches(n: number) {
      state.jwksFetches = n;
    },
    async token(claims, o = {}) {
      const alg = o.alg ?? 'ES256';
      const key = keys.find((k) => k.alg === alg) as Key;
      return new SignJWT(claims)
        .setProtectedHeader({ alg, kid: o.kid ?? key.kid })
        .setIssuer(o.issuer ?? idp.issuer)
        .setAudience(o.audience ?? opts.audience ?? 'felix')
        .setIssuedAt()
        .setExpirationTime(Math.floor(Date.now() / 1000) + (o.expiresInS ?? 300))
        .sign(key.privateKey);
    },
    async rotate() {
      const k = await makeKey('ES256', `es-${keys.length + 1}`);
      keys.unshift(k);
      return k.kid;
    },
    close: () =>
      new Promise<void>((resolve, reject) =>
        server?.close((err) => (err ? reject(err) : resolve())),
      ),
  };
  return idp;
}
