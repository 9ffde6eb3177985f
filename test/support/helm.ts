/** helm against the chart in charts/agentplane, with its caches and configuration in a directory of its own. */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { findTool } from '../../cli/tools.js';
import { scratch } from './services.js';

export const chart = fileURLToPath(new URL('../../../charts/agentplane', import.meta.url));

export interface Manifest {
  kind: string;
  metadata: { name: string; namespace?: string; annotations?: Record<string, string> };
  [field: string]: any;
}

export function run(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(command, args, { env: { ...process.env, ...env }, maxBuffer: 32 * 1024 * 1024 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

let helmHome: Promise<NodeJS.ProcessEnv> | undefined;
/** helm with its caches and configuration under the suite's scratch directory. */
export async function helm(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  helmHome ??= scratch.then((dir) => ({
    HELM_CACHE_HOME: join(dir, 'helm', 'cache'),
    HELM_CONFIG_HOME: join(dir, 'helm', 'config'),
    HELM_DATA_HOME: join(dir, 'helm', 'data'),
  }));
  return run(findTool('helm'), args, await helmHome);
}
