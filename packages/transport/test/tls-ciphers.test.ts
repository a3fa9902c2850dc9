/**
 * Goal: a Felix listener settles TLS connections on AES-128-GCM, the cheapest suite per byte,
 * which every TLS 1.3 peer supports.
 * Method: a raw node:tls client offering OpenSSL's default order (AES-256 first); read the suite
 * it negotiated.
 */
import { connect as tlsConnect } from 'node:tls';
import { describe, expect, it } from 'vitest';
import { startListener } from './helpers.js';

describe('tls cipher suites', () => {
  it('a_felix_listener_picks_aes_128_gcm_over_a_client_preferring_aes_256', async () => {
    const listener = await startListener('tls');
    try {
      const suite = await new Promise<string>((resolve, reject) => {
        const s = tlsConnect({
          host: '127.0.0.1',
          port: listener.port,
          ALPNProtocols: ['felix/1'],
          rejectUnauthorized: false,
          ciphers: 'TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256',
        });
        s.on('error', reject);
        s.on('secureConnect', () => {
          resolve(s.getCipher().name);
          s.destroy();
        });
      });
      expect(suite).toBe('TLS_AES_128_GCM_SHA256');
    } finally {
      await listener.close();
    }
  });
});
