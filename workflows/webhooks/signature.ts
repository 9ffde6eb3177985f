/**
 * Standard Webhooks signing: `v1,` and the base64 HMAC-SHA256 of `<id>.<timestamp>.<body>`, keyed with the
 * bytes of the secret after `whsec_`. Several secrets (a rotation's grace period) give several
 * signatures, space-separated; a receiver accepts the message if any of them verifies.
 */
import { createHmac } from 'node:crypto';

export function signatureOf(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

export interface SignedHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

export function signedHeaders(secrets: string[], id: string, timestamp: number, body: string): SignedHeaders {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': secrets.map((secret) => signatureOf(secret, id, timestamp, body)).join(' '),
  };
}
