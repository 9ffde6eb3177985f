import assert from 'node:assert/strict';
import { Webhook } from 'standardwebhooks';
import { newSigningSecret, signingSecretsOf, type WebhookEndpointRecord } from '../../records/webhooks.js';
import { signatureOf, signedHeaders } from '../../workflows/webhooks/signature.js';

describe('webhook signatures', () => {
  const body = JSON.stringify({
    id: 'evt_1',
    object: 'event',
    type: 'file.deleted',
    created_at: 1_700_000_000,
    data: { id: 'file_1', object: 'file' },
  });

  it('signs exactly as the standardwebhooks package does', () => {
    const secret = newSigningSecret();
    const timestamp = Math.floor(Date.now() / 1000);
    assert.equal(signatureOf(secret, 'evt_1', timestamp, body), new Webhook(secret).sign('evt_1', new Date(timestamp * 1000), body));
  });

  it('carries one signature per secret, each verifying on its own, and none for a changed body', () => {
    const current = newSigningSecret();
    const previous = newSigningSecret();
    const headers = signedHeaders([current, previous], 'evt_1', Math.floor(Date.now() / 1000), body);
    assert.equal(headers['webhook-signature'].split(' ').length, 2);
    for (const secret of [current, previous]) assert.deepEqual(new Webhook(secret).verify(body, headers), JSON.parse(body));
    assert.throws(() => new Webhook(newSigningSecret()).verify(body, headers));
    assert.throws(() => new Webhook(current).verify(body.replace('file_1', 'file_2'), headers));
  });

  it('signs with the previous secret only during its grace period', () => {
    const endpoint = {
      secret: 'whsec_new',
      previous_secret: 'whsec_old',
      previous_secret_expires_at: new Date(Date.now() + 60_000),
    } as WebhookEndpointRecord;
    assert.deepEqual(signingSecretsOf(endpoint), ['whsec_new', 'whsec_old']);
    assert.deepEqual(signingSecretsOf({ ...endpoint, previous_secret_expires_at: new Date(Date.now() - 1) }), ['whsec_new']);
    assert.deepEqual(signingSecretsOf({ ...endpoint, previous_secret: null, previous_secret_expires_at: null }), ['whsec_new']);
  });

  it('makes secrets of 32 random bytes in the whsec_ format', () => {
    const secret = newSigningSecret();
    assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.notEqual(secret, newSigningSecret());
  });
});
