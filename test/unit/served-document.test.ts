import assert from 'node:assert/strict';
import { Ajv2020 } from 'ajv/dist/2020.js';
import ipaddr from 'ipaddr.js';
import { servedDocument } from '../../api/served-document.js';
import { literalHostProblem } from '../../tools/network-guard.js';

/** Whether the served document's schema `name` admits `url`. */
function admits(document: ReturnType<typeof servedDocument>, name: 'ToolUrl' | 'WebhookUrl', url: string): boolean {
  const ajv = new Ajv2020({ strict: false });
  ajv.addSchema({ ...document, $id: 'served' });
  return ajv.compile({ $ref: `served#/components/schemas/${name}` })(url) as boolean;
}

type Range = [ipaddr.IPv4, number];
const specialRanges = (ipaddr.IPv4.prototype as unknown as { SpecialRanges: Record<string, Range[] | Range> }).SpecialRanges;
const quad = (n: number) => [24, 16, 8, 0].map((shift) => (n >>> shift) & 0xff).join('.');

describe('the document a deployment serves', () => {
  const refusing = servedDocument({ toolsAllowPrivate: false, webhooksAllowPrivate: false });
  const allowing = servedDocument({ toolsAllowPrivate: true, webhooksAllowPrivate: true });

  it('rules out in the URL schemas exactly the localhost names and IPv4 literals the API refuses by their text, where the deployment refuses private targets', () => {
    const ajv = new Ajv2020({ strict: false });
    ajv.addSchema({ ...refusing, $id: 'served' });
    const toolUrl = ajv.compile({ $ref: 'served#/components/schemas/ToolUrl' });
    const webhookUrl = ajv.compile({ $ref: 'served#/components/schemas/WebhookUrl' });
    // Both edges of every special range, and the addresses either side of them, then a spread of the rest.
    const addresses = new Set<number>();
    for (const [base, prefix] of Object.values(specialRanges).flatMap((r) => (Array.isArray(r[0]) ? (r as Range[]) : [r as Range]))) {
      const first = base.toByteArray().reduce((n, octet) => n * 256 + octet, 0);
      const last = first + 2 ** (32 - prefix) - 1;
      for (const n of [first - 1, first, last, last + 1]) if (n >= 0 && n < 2 ** 32) addresses.add(n);
    }
    for (let n = 7; n < 2 ** 32; n += 2 ** 32 / 20_000) addresses.add(Math.floor(n));
    for (const n of addresses) {
      const url = `http://${quad(n)}:8080/hook`;
      const refused = literalHostProblem(new URL(url)) !== null;
      assert.equal(toolUrl(url), !refused, url);
      assert.equal(webhookUrl(url), !refused, url);
    }
    for (const url of [
      'http://localhost/',
      'https://LOCALHOST.:8443',
      'http://api.localhost/x',
      'http://a-b.c.localhost?q',
      'http://a--b.localhost/',
    ]) {
      assert.notEqual(literalHostProblem(new URL(url)), null, url);
      assert.equal(toolUrl(url), false, url);
      assert.equal(webhookUrl(url), false, url);
    }
    for (const url of [
      'http://localhost.example.com/',
      'http://mylocalhost/',
      'https://hooks.example.com/in',
      'http://[2606:4700::1111]/',
      'https://xn--mnchen-3ya.de/hook',
      'https://deploy-preview-42--site.netlify.app/hook',
      'http://shop.xn--p1ai/',
    ]) {
      assert.equal(toolUrl(url), true, url);
      assert.equal(webhookUrl(url), true, url);
    }
  });

  it('says so in words where it refuses private targets, and claims no such rule where it allows them', () => {
    const descriptions = (document: typeof refusing) =>
      (['ToolUrl', 'WebhookUrl'] as const).map((name) => (document.components.schemas[name] as { description: string }).description);
    for (const description of descriptions(refusing)) assert.match(description, /This deployment refuses private, loopback, link-local/);
    for (const description of descriptions(allowing)) {
      assert.match(description, /This deployment allows private, loopback and link-local targets/);
      assert.doesNotMatch(description, /This deployment refuses/);
    }
    for (const url of ['http://127.0.0.1:9000/hook', 'http://localhost/', 'http://10.0.0.7/']) {
      assert.equal(admits(allowing, 'ToolUrl', url), true, url);
      assert.equal(admits(allowing, 'WebhookUrl', url), true, url);
    }
  });

  it('states each policy on its own URL: tools may be refused private targets while webhooks are allowed them, and the other way round', () => {
    const toolsOnly = servedDocument({ toolsAllowPrivate: false, webhooksAllowPrivate: true });
    assert.deepEqual(
      [admits(toolsOnly, 'ToolUrl', 'http://10.0.0.7/'), admits(toolsOnly, 'WebhookUrl', 'http://10.0.0.7/')],
      [false, true],
    );
    const webhooksOnly = servedDocument({ toolsAllowPrivate: true, webhooksAllowPrivate: false });
    assert.deepEqual(
      [admits(webhooksOnly, 'ToolUrl', 'http://10.0.0.7/'), admits(webhooksOnly, 'WebhookUrl', 'http://10.0.0.7/')],
      [true, false],
    );
  });
});
