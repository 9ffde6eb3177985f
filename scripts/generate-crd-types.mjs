// The TypeScript types of the Agent and AgentNetwork resources' spec and status, generated from the CRDs'
// openAPIV3Schema (crds/*.yaml) as the API's types are from api/openapi.yaml, so the controller reads exactly
// what the API server admits. `npm run generate` writes controllers/generated/crds.ts; a unit test checks that
// the committed file is what this makes now.
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import openapiTS, { astToString } from 'openapi-typescript';
import { parse } from 'yaml';

const root = fileURLToPath(new URL('..', import.meta.url));
export const generatedFile = join(root, 'controllers', 'generated', 'crds.ts');

const HEADER = `/**
 * Generated from crds/*.yaml by scripts/generate-crd-types.mjs (\`npm run generate\`): do not edit.
 * components['schemas'] holds <Kind>Spec and <Kind>Status for each CRD.
 */

`;

/** The schema in OpenAPI 3.0 terms: the Kubernetes extensions that change what a value may be, spelled out. */
function portable(schema) {
  if (Array.isArray(schema)) return schema.map(portable);
  if (schema === null || typeof schema !== 'object') return schema;
  const out = {};
  for (const [key, value] of Object.entries(schema)) {
    // Arbitrary JSON kept as it is (a tool's JSON Schema): any field, any value.
    if (key === 'x-kubernetes-preserve-unknown-fields' && value === true) out.additionalProperties = true;
    else if (!key.startsWith('x-kubernetes-')) out[key] = portable(value);
  }
  return out;
}

/** The generated module's text. */
export async function crdTypes() {
  const dir = join(root, 'crds');
  const schemas = {};
  for (const file of readdirSync(dir)
    .filter((name) => name.endsWith('.yaml'))
    .sort()) {
    const crd = parse(readFileSync(join(dir, file), 'utf8'));
    const { properties } = crd.spec.versions[0].schema.openAPIV3Schema;
    schemas[`${crd.spec.names.kind}Spec`] = portable(properties.spec);
    schemas[`${crd.spec.names.kind}Status`] = portable(properties.status);
  }
  const document = { openapi: '3.0.3', info: { title: 'agentplane.io/v1alpha1', version: 'v1alpha1' }, paths: {}, components: { schemas } };
  // A field with a default stays optional: the controller also reads objects written before the default existed.
  const ast = await openapiTS(document, { defaultNonNullable: false, alphabetize: false });
  return HEADER + astToString(ast);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) writeFileSync(generatedFile, await crdTypes());
