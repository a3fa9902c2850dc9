/**
 * Goal: clients verify servers by default, by CA or by pinned fingerprint, and the development
 * certificate is made once and kept. Method: real TLS dials against a listener using the dev
 * certificate, with each verification mode.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { tempDir } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import {
  BadAddressError,
  DialError,
  FingerprintMismatchError,
  dial,
  loadOrCreateDevCertificate,
  parseAddress,
} from '../src/index.js';
import { devMaterial, startListener } from './helpers.js';

describe('tls material', () => {
  it('the_dev_certificate_is_created_once_and_reloaded_with_its_fingerprint', async () => {
    const dir = await tempDir('felix-devcert-');
    try {
      const first = await loadOrCreateDevCertificate(dir.path);
      const again = await loadOrCreateDevCertificate(dir.path);
      expect(again.certPem).toBe(first.certPem);
      expect(again.fingerprint).toBe(first.fingerprint);
      expect(first.fingerprint).toMatch(/^([0-9A-F]{2}:){31}[0-9A-F]{2}$/);
      const onDisk = await readFile(join(dir.path, 'tls', 'dev-cert.sha256'), 'utf8');
      expect(onDisk.trim()).toBe(first.fingerprint);
    } finally {
      await dir.cleanup();
    }
  });

  it('clients_verify_by_ca_or_pinned_fingerprint_and_refuse_unknown_certificates', async () => {
    const m = await devMaterial();
    const listener = await startListener('tls');
    const url = `tls://127.0.0.1:${listener.port}`;
    try {
      const byCa = await dial(url, { ca: m.certPem });
      await byCa.close();
      const byPin = await dial(url, {
        fingerprint: `sha256:${m.fingerprint.replace(/:/g, '').toLowerCase()}`,
      });
      await byPin.close();

      const wrongPin = await dial(url, { fingerprint: 'AB'.repeat(32) }).catch((e: unknown) => e);
      expect(wrongPin).toBeInstanceOf(DialError);
      expect((wrongPin as DialError).cause).toBeInstanceOf(FingerprintMismatchError);

      const unverified = await dial(url, {}).catch((e: unknown) => e);
      expect(unverified).toBeInstanceOf(DialError);

      const insecure = await dial(url, { insecureSkipVerify: true });
      await insecure.close();
    } finally {
      await listener.close();
    }
  });

  it('addresses_parse_as_quic_or_tls_host_and_port', () => {
    expect(parseAddress('quic://127.0.0.1:7000')).toEqual({
      transport: 'quic',
      host: '127.0.0.1',
      port: 7000,
    });
    expect(parseAddress('tls://[::1]:443')).toEqual({ transport: 'tls', host: '::1', port: 443 });
    expect(parseAddress('tls://broker.example:9000')).toEqual({
      transport: 'tls',
      host: 'broker.example',
      port: 9000,
    });
    for (const bad of [
      'http://a:1',
      'tls://a',
      'quic://a:0',
      'quic://a:70000',
      'tls://:1',
      'tls//a:1',
    ]) {
      expect(() => parseAddress(bad)).toThrow(BadAddressError);
    }
  });
});
