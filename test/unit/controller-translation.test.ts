/**
 * Golden tests of the controller's translation of resources into API request bodies: each
 * test/fixtures/controller/inputs/NAME.yaml (the resource first, then the Agents of its namespace, then the
 * platform's agent records by uid) must translate into test/fixtures/controller/outputs/NAME.json, a request
 * body (which the API's document must accept) or the reason the resource must wait. After an intended change, rewrite the outputs with
 * RECORD_GOLDEN=1 and review their diff.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { parseAllDocuments } from 'yaml';
import { openapiDocument } from '../../api/openapi-document.js';
import { agentBody } from '../../controllers/agents.js';
import { networkBody } from '../../controllers/networks.js';
import type { AgentNetworkResource, AgentResource } from '../../controllers/resources.js';

const fixtures = fileURLToPath(new URL('../../../test/fixtures/controller/', import.meta.url));
const inputs = join(fixtures, 'inputs');
const outputs = join(fixtures, 'outputs');
const recording = process.env.RECORD_GOLDEN === '1';

interface PlatformRecords {
  kind: 'PlatformRecords';
  agents: Record<string, string>;
}

type Document = AgentResource | AgentNetworkResource | PlatformRecords;

async function translate(file: string): Promise<unknown> {
  const documents = parseAllDocuments(readFileSync(join(inputs, file), 'utf8')).map((document) => document.toJS() as Document);
  const [resource, ...others] = documents;
  const agents = others.filter((document): document is AgentResource => document.kind === 'Agent');
  const records = others.find((document): document is PlatformRecords => document.kind === 'PlatformRecords')?.agents ?? {};
  if (resource?.kind === 'Agent') {
    const agent = resource as AgentResource;
    return agentBody(agent.metadata.name, agent.spec);
  }
  if (resource?.kind === 'AgentNetwork') {
    return networkBody(
      resource as AgentNetworkResource,
      (namespace, name) => agents.find((agent) => agent.metadata.namespace === namespace && agent.metadata.name === name),
      async (uid) => (records[uid] ? { id: records[uid] } : null),
    );
  }
  throw new Error(`${file}: the first document must be an Agent or an AgentNetwork`);
}

const ajv = new Ajv2020({ strict: false });
ajv.addSchema({ ...openapiDocument, $id: 'agentplane-openapi' });
const isBlocked = (translated: unknown) =>
  typeof translated === 'object' && translated !== null && 'reason' in translated && !('name' in translated);
const requestSchemas = { Agent: 'CreateAgentRequest', AgentNetwork: 'CreateNetworkRequest' } as const;

describe('the controller translating resources into API bodies', () => {
  const files = readdirSync(inputs)
    .filter((file) => file.endsWith('.yaml'))
    .sort();

  for (const file of files) {
    const name = basename(file, '.yaml');
    it(`translates ${name}`, async () => {
      const translated = await translate(file);
      const actual = `${JSON.stringify(translated, null, 2)}\n`;
      const output = join(outputs, `${name}.json`);
      if (recording) {
        mkdirSync(outputs, { recursive: true });
        writeFileSync(output, actual);
      }
      assert.ok(existsSync(output), `${output} is missing: record it with RECORD_GOLDEN=1`);
      assert.equal(actual, readFileSync(output, 'utf8'));
      // A body (not the reason to wait) is one the API accepts.
      if (!isBlocked(translated)) {
        const kind = parseAllDocuments(readFileSync(join(inputs, file), 'utf8'))[0]!.get('kind') as keyof typeof requestSchemas;
        const validate = ajv.compile({ $ref: `agentplane-openapi#/components/schemas/${requestSchemas[kind]}` });
        assert.ok(validate(translated), `the API would refuse the body: ${ajv.errorsText(validate.errors)}`);
      }
    });
  }

  it('has an input for every output', () => {
    const expected = files.map((file) => `${basename(file, '.yaml')}.json`);
    assert.deepEqual(
      readdirSync(outputs).filter((file) => !expected.includes(file)),
      [],
    );
  });
});
