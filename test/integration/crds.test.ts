import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { installCrds, startKubeCluster, type KubeCluster } from '../support/kube.js';

const crdsDir = fileURLToPath(new URL('../../../crds/', import.meta.url));
const examplesDir = fileURLToPath(new URL('../../../examples/', import.meta.url));

function network(spec: Record<string, unknown>, name = 'net'): string {
  return JSON.stringify({ apiVersion: 'agentplane.io/v1alpha1', kind: 'AgentNetwork', metadata: { name }, spec });
}

function agent(spec: Record<string, unknown>, name = 'agent'): string {
  return JSON.stringify({ apiVersion: 'agentplane.io/v1alpha1', kind: 'Agent', metadata: { name }, spec });
}

describe('the CRDs on a real API server', function () {
  this.timeout(120_000);
  let cluster: KubeCluster;

  before(async () => {
    cluster = await startKubeCluster('crds');
    await installCrds(cluster, crdsDir);
  });

  after(async () => {
    await cluster?.stop();
  });

  it('accept the examples, which `kubectl get agentplane` then lists with their printer columns', async () => {
    const applied = await cluster.kubectl(['apply', '-n', 'default', '-f', examplesDir]);
    assert.equal(applied.code, 0, applied.stderr);
    const listed = await cluster.kubectl(['get', 'agentplane', '-n', 'default']);
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, /agent\.agentplane\.io\/researcher/);
    assert.match(listed.stdout, /agentnetwork\.agentplane\.io\/support-desk/);
    const agents = await cluster.kubectl(['get', 'apa', '-n', 'default']);
    assert.match(agents.stdout.split('\n')[0]!, /^NAME\s+READY\s+MODEL\s+PLATFORM ID\s+AGE$/);
    const networks = await cluster.kubectl(['get', 'apn', '-n', 'default']);
    assert.match(networks.stdout.split('\n')[0]!, /^NAME\s+READY\s+ROUTER\s+MEMBERS\s+PLATFORM ID\s+AGE$/);
    assert.match(networks.stdout, /support-desk\s+supervisor\s+\["researcher","writer"\]/);
  });

  it('fill in the defaults a user leaves out', async () => {
    const applied = await cluster.kubectl(['apply', '-f', '-', '-o', 'json'], { input: agent({ model: 'auto' }, 'defaults') });
    assert.equal(applied.code, 0, applied.stderr);
    const { spec } = JSON.parse(applied.stdout);
    assert.deepEqual(spec, {
      model: 'auto',
      instructions: '',
      tools: [],
      concurrency: 'allow',
      maxSteps: 10,
      approvalTimeoutSeconds: 604800,
    });
  });

  const rejected: [string, string, RegExp][] = [
    [
      'a supervisor router with neither agent nor instructions',
      network({ members: ['a'], router: { type: 'supervisor' } }),
      /a supervisor router needs a router agent \(router.agent\) or instructions \(router.instructions\)/,
    ],
    [
      'a supervisor router with both agent and instructions',
      network({ members: ['a'], router: { type: 'supervisor', agent: 'r', instructions: 'route' } }),
      /either an agent \(router.agent\) or instructions \(router.instructions\), not both/,
    ],
    [
      'a sequential router given a router agent',
      network({ members: ['a'], router: { type: 'sequential', agent: 'r' } }),
      /belong to a supervisor router only/,
    ],
    [
      'a network with no members',
      network({ members: [], router: { type: 'sequential' } }),
      /spec.members: Invalid value: 0: spec.members in body should have at least 1 items/,
    ],
    [
      'a network with a member named twice',
      network({ members: ['a', 'a'], router: { type: 'sequential' } }),
      /spec.members\[1\]: Duplicate value: "a"/,
    ],
    [
      'maxHops of 0',
      network({ members: ['a'], router: { type: 'sequential' }, maxHops: 0 }),
      /spec.maxHops: Invalid value: 0: spec.maxHops in body should be greater than or equal to 1/,
    ],
    [
      'a worker pool naming its own image',
      network({ members: ['a'], router: { type: 'sequential' }, workerPool: { image: 'attacker.example/envdump:1' } }),
      /spec.workerPool.image: Invalid value: "object": workerPool.image is not accepted: pool workers run the platform's worker image/,
    ],
    [
      'a worker pool of 0 replicas',
      network({ members: ['a'], router: { type: 'sequential' }, workerPool: { replicas: 0 } }),
      /spec.workerPool.replicas/,
    ],
    ['an agent with no model', agent({ instructions: 'hi' }), /spec.model: Required value/],
    ['an unknown concurrency', agent({ model: 'auto', concurrency: 'sometimes' }), /spec.concurrency: Unsupported value: "sometimes"/],
    [
      'an http tool without a url',
      agent({ model: 'auto', tools: [{ type: 'http', name: 'lookup' }] }),
      /an http tool needs a name and a url/,
    ],
    [
      'an mcp tool with an http tool field',
      agent({ model: 'auto', tools: [{ type: 'mcp', serverLabel: 'docs', serverUrl: 'https://mcp.example.com/mcp', method: 'GET' }] }),
      /belong to http tools, not mcp tools/,
    ],
    [
      'an a2a tool without a cardUrl',
      agent({ model: 'auto', tools: [{ type: 'a2a', name: 'reviewer' }] }),
      /an a2a tool needs a cardUrl, which belongs to a2a tools only/,
    ],
    [
      'an http tool allowed the time of an a2a tool',
      agent({ model: 'auto', tools: [{ type: 'http', name: 'slow', url: 'https://slow.example.com', timeoutMs: 90000 }] }),
      /timeoutMs is at most 60000 for http and mcp tools/,
    ],
    [
      'an approval `when` without the arguments to match',
      agent({ model: 'auto', tools: [{ type: 'http', name: 'pay', url: 'https://pay.example.com', approval: { mode: 'when' } }] }),
      /arguments is required with mode when, and belongs to it only/,
    ],
    [
      'a policy without denyWhen',
      agent({ model: 'auto', tools: [{ type: 'http', name: 'pay', url: 'https://pay.example.com', policy: {} }] }),
      /spec.tools\[0\].policy.denyWhen: Required value/,
    ],
    [
      'a builtin tool that is not one',
      agent({ model: 'auto', tools: [{ type: 'builtin', name: 'send_mail' }] }),
      /a builtin tool is named read_file or search_context/,
    ],
    [
      'a cost cap that is not a decimal',
      agent({ model: 'auto', maxCostUsd: 'ten dollars' }),
      /spec.maxCostUsd: Invalid value: "ten dollars"/,
    ],
    [
      'a temperature above 2',
      agent({ model: 'auto', modelSettings: { temperature: 3 } }),
      /spec.modelSettings.temperature: Invalid value: 3/,
    ],
  ];
  for (const [what, manifest, message] of rejected) {
    it(`reject ${what}, saying why`, async () => {
      const result = await cluster.kubectl(['apply', '-f', '-'], { input: manifest });
      assert.notEqual(result.code, 0);
      assert.match(result.stderr, message);
    });
  }

  it('explain every field to kubectl explain', async () => {
    const explained = await cluster.kubectl(['explain', 'agentnetworks.spec.router.agent']);
    assert.equal(explained.code, 0, explained.stderr);
    assert.match(explained.stdout, /The name of the Agent in this namespace that routes/);
    const status = await cluster.kubectl(['explain', 'agents.status.id']);
    assert.match(status.stdout, /The platform's id of this agent/);
  });
});
