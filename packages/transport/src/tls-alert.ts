/**
 * A TLS alert the peer sent, in words. A peer that refuses our certificate after the handshake
 * (TLS 1.3 checks the client's certificate last) says so only as an alert number: QUIC carries
 * it as transport error 0x100 + alert (RFC 9001 §4.8), OpenSSL as "SSL alert number N". No I/O.
 */

/** RFC 8446 §6 alert descriptions a handshake can end with. */
const ALERT_NAMES: ReadonlyMap<number, string> = new Map([
  [10, 'unexpected_message'],
  [20, 'bad_record_mac'],
  [40, 'handshake_failure'],
  [42, 'bad_certificate'],
  [43, 'unsupported_certificate'],
  [44, 'certificate_revoked'],
  [45, 'certificate_expired'],
  [46, 'certificate_unknown'],
  [47, 'illegal_parameter'],
  [48, 'unknown_ca'],
  [49, 'access_denied'],
  [50, 'decode_error'],
  [51, 'decrypt_error'],
  [70, 'protocol_version'],
  [71, 'insufficient_security'],
  [80, 'internal_error'],
  [109, 'missing_extension'],
  [112, 'unrecognized_name'],
  [116, 'certificate_required'],
  [120, 'no_application_protocol'],
]);

/** Alerts that refuse the certificate this side presented (or its absence). */
const CERTIFICATE_ALERTS = new Set([42, 43, 44, 45, 46, 48]);

const QUIC_CRYPTO_ERROR_BASE = 0x100;

/** The refusal an alert number stands for, in one clause. */
export function tlsAlertReason(alert: number): string {
  const name = ALERT_NAMES.get(alert) ?? 'unknown alert';
  const said = `the peer ended the TLS handshake with alert ${alert} (${name})`;
  if (alert === 116) return `${said}: it requires a client certificate and none was presented`;
  if (CERTIFICATE_ALERTS.has(alert))
    return `${said}: it does not accept this side's certificate (not signed by a CA it trusts, expired or revoked)`;
  return said;
}

/** The alert inside a QUIC transport error code (0x100–0x1ff), or undefined. */
export function quicCryptoAlert(transportCode: number): number | undefined {
  const alert = transportCode - QUIC_CRYPTO_ERROR_BASE;
  return alert >= 0 && alert <= 0xff ? alert : undefined;
}

/** The alert number an error's text names ("Peer closed with transport code 304", or
 *  OpenSSL's "SSL alert number 116"), or undefined. */
export function alertInText(text: string): number | undefined {
  const openssl = /SSL alert number (\d{1,3})\b/.exec(text);
  if (openssl) return Number(openssl[1]);
  const quic = /[Pp]eer closed with transport code (\d{1,5})\b/.exec(text);
  return quic ? quicCryptoAlert(Number(quic[1])) : undefined;
}
