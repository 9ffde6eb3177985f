import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { openapiDocument } from '../../api/openapi-document.js';

interface Schema {
  enum?: string[];
  const?: string;
  oneOf?: Schema[];
  properties?: Record<string, Schema>;
}

const schemas = openapiDocument.components.schemas as Record<string, Schema>;
const crd = parse(readFileSync(fileURLToPath(new URL('../../../crds/agentnetworks.agentplane.io.yaml', import.meta.url)), 'utf8'));
const crdSpec = crd.spec.versions[0].schema.openAPIV3Schema.properties.spec as Schema;

const valuesOf = (schema: Schema): string[] => [...(schema.enum ?? []), ...(schema.const ? [schema.const] : [])];
const sorted = (values: string[]) => [...new Set(values)].sort();

/** The router types a network may be created with: every branch of the document's NetworkRouter. */
const apiRouterTypes = sorted(schemas.NetworkRouter!.oneOf!.flatMap((branch) => valuesOf(branch.properties!.type!)));

describe('the router types', () => {
  it('are sequential, supervisor and handoff in the API document', () => {
    assert.deepEqual(apiRouterTypes, ['handoff', 'sequential', 'supervisor']);
  });

  it('of an AgentNetwork resource are those of the API', () => {
    assert.deepEqual(sorted(valuesOf(crdSpec.properties!.router!.properties!.type!)), apiRouterTypes);
  });

  it('that hop decisions name (NetworkRouterType) are those a network may be created with', () => {
    assert.deepEqual(sorted(valuesOf(schemas.NetworkRouterType!)), apiRouterTypes);
  });
});
