// A stand-in OIDC identity provider on loopback: it serves a JWKS and signs ES256 ID tokens for
// any subject. In production this is your IdP (Okta, Keycloak, ...); the control plane exchanges
// its tokens for Felix tokens carrying what RBAC grants the user at that moment.
import { createServer } from 'node:http';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';

export const IDP_AUDIENCE = 'felix-demo';

export async function startIdp() {
  const { publicKey, privateKey } = await generateKeyPair('ES256', { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid: 'idp-1', alg: 'ES256', use: 'sig' };
  const server = createServer((req, res) => {
    const found = req.url === '/jwks.json';
    res.writeHead(found ? 200 : 404, { 'content-type': 'application/json' });
    res.end(found ? JSON.stringify({ keys: [jwk] }) : '{}');
  });
  await new Promise((done) => server.listen(0, '127.0.0.1', done));
  const url = `http://127.0.0.1:${server.address().port}`;
  const issuer = `${url}/`;
  return {
    issuer,
    jwksUrl: `${url}/jwks.json`,
    /** An ID token for `subject`, as a user's login would produce. */
    idToken: (subject) =>
      new SignJWT({})
        .setProtectedHeader({ alg: 'ES256', kid: 'idp-1' })
        .setIssuer(issuer)
        .setAudience(IDP_AUDIENCE)
        .setSubject(subject)
        .setIssuedAt()
        .setExpirationTime('5m')
        .sign(privateKey),
    close: () => new Promise((done) => server.close(done)),
  };
}
