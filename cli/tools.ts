/** Locates the external programs `dev` and the tests run; scripts/deps installs them into the cache. */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';

export const TEMPORAL_CLI_VERSION = '1.9.1';
export const MINIO_VERSION = 'v0.0.0-20260212201848-7aac2a2c5b7c';
export const SCHEMATHESIS_VERSION = '4.32.5';

export const cacheDir = process.env.AGENTPLANE_CACHE_DIR ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'agentplane');

const candidates: Record<string, { env: string; cached: string }> = {
  temporal: { env: 'AGENTPLANE_TEMPORAL_BIN', cached: join(cacheDir, `temporal-${TEMPORAL_CLI_VERSION}`, 'bin', 'temporal') },
  minio: { env: 'AGENTPLANE_MINIO_BIN', cached: join(cacheDir, `minio-${MINIO_VERSION}`, 'minio') },
  schemathesis: { env: 'AGENTPLANE_SCHEMATHESIS_BIN', cached: join(cacheDir, `schemathesis-${SCHEMATHESIS_VERSION}`, 'bin', 'schemathesis') },
};

export function findTool(name: 'temporal' | 'minio' | 'schemathesis'): string {
  const { env, cached } = candidates[name]!;
  const fromEnv = process.env[env];
  if (fromEnv) return fromEnv;
  if (existsSync(cached)) return cached;
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir && existsSync(join(dir, name))) return join(dir, name);
  }
  throw new Error(`The ${name} program was not found. Run \`npm run deps\` to install it (or set ${env}).`);
}
