import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

interface Generator {
  generatedFile: string;
  crdTypes(): Promise<string>;
}

describe("the controller's resource types", () => {
  it('are the ones generated from the CRD schemas now (npm run generate)', async function () {
    this.timeout(30_000);
    const generator = (await import(new URL('../../../scripts/generate-crd-types.mjs', import.meta.url).href)) as Generator;
    const generated = await generator.crdTypes();
    assert.ok(generated.includes('AgentSpec: {') && generated.includes('AgentNetworkSpec: {'), 'the generator produced no resource types');
    assert.ok(
      generated === readFileSync(generator.generatedFile, 'utf8'),
      'controllers/generated/crds.ts is out of date with crds/*.yaml: run `npm run generate`',
    );
  });
});
