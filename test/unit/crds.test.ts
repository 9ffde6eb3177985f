import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

const crdsDir = fileURLToPath(new URL('../../../crds/', import.meta.url));

interface Schema {
  description?: string;
  properties?: Record<string, Schema>;
  items?: Schema;
  additionalProperties?: Schema | boolean;
}

/**
 * Every field below `spec` and `status` whose description `kubectl explain` would show empty (an array's
 * items are explained by the array's own description, so only their fields need one).
 */
function undescribed(schema: Schema, path: string, isItem = false): string[] {
  const missing = schema.description || isItem ? [] : [path];
  for (const [name, child] of Object.entries(schema.properties ?? {})) missing.push(...undescribed(child, `${path}.${name}`));
  if (schema.items) missing.push(...undescribed(schema.items, `${path}[]`, true));
  return missing;
}

describe('the CRDs', () => {
  const files = readdirSync(crdsDir).filter((file) => file.endsWith('.yaml'));

  it('define Agent and AgentNetwork in agentplane.io/v1alpha1, namespaced, in the agentplane category, with short names', () => {
    const crds = files.map((file) => parse(readFileSync(join(crdsDir, file), 'utf8')));
    assert.deepEqual(crds.map((crd) => crd.spec.names.kind).sort(), ['Agent', 'AgentNetwork']);
    for (const crd of crds) {
      assert.equal(crd.spec.group, 'agentplane.io');
      assert.equal(crd.spec.scope, 'Namespaced');
      assert.deepEqual(crd.spec.names.categories, ['agentplane']);
      assert.equal(crd.spec.names.shortNames.length, 1);
      assert.deepEqual(
        crd.spec.versions.map((v: { name: string }) => v.name),
        ['v1alpha1'],
      );
      assert.deepEqual(crd.spec.versions[0].subresources, { status: {} });
    }
  });

  for (const file of files) {
    it(`describe every field of ${file.replace('.yaml', '')} for kubectl explain`, () => {
      const crd = parse(readFileSync(join(crdsDir, file), 'utf8'));
      const root = crd.spec.versions[0].schema.openAPIV3Schema as Schema;
      const missing = ['spec', 'status'].flatMap((part) => undescribed(root.properties![part]!, part));
      assert.deepEqual(missing, []);
    });
  }
});
