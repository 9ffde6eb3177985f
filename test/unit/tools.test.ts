import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { MINIO_VERSION, TEMPORAL_CLI_VERSION, pinnedVersion } from '../../cli/tools.js';

const versionsFile = fileURLToPath(new URL('../../../scripts/versions.env', import.meta.url));

/** What scripts/deps sees once it has sourced the file. */
async function sourcedByBash(name: string): Promise<string> {
  const { stdout } = await promisify(execFile)('bash', ['-c', `set -eu; source "$1"; printf %s "\${${name}}"`, 'bash', versionsFile]);
  return stdout;
}

describe('pinned tool versions', () => {
  it('are the ones scripts/deps installs, read from the one file both use', async () => {
    assert.equal(TEMPORAL_CLI_VERSION, await sourcedByBash('TEMPORAL_CLI_VERSION'));
    assert.equal(MINIO_VERSION, await sourcedByBash('MINIO_VERSION'));
    assert.equal(pinnedVersion('SCHEMATHESIS_VERSION'), await sourcedByBash('SCHEMATHESIS_VERSION'));
  });

  it('name the variable when asked for one the file does not pin', () => {
    assert.throws(() => pinnedVersion('NO_SUCH_VERSION'), /pins no NO_SUCH_VERSION/);
  });
});
