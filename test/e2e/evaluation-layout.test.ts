/**
 * The chart's evaluation layout, run here the way its pod runs: the StatefulSet's command and environment as
 * `helm install` with no values renders them (the Secrets' keys included), as its user, on a read-only root
 * with only its volume and /tmp writable (a mount namespace of the process's own), with the tools the image
 * holds. Then the API is used as a new user would.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chown, mkdir, mkdtemp, readdir, readFile, realpath, rm, rmdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { isAbsolute, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { freePort, stopChild } from '../../cli/embedded.js';
import { findTool } from '../../cli/tools.js';
import { ApiClient } from '../support/client.js';
import { eventually } from '../support/eventually.js';
import { chart, helm, type Manifest } from '../support/helm.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));

interface PodCommand {
  args: string[];
  env: Record<string, string>;
  user: number;
  group: number;
  /** Each volume's mount path, by volume name. */
  mounts: Record<string, string>;
}

/** The StatefulSet's container as the kubelet would start it, its Secrets and ConfigMap resolved. */
function podCommand(manifests: Manifest[]): PodCommand {
  const statefulSet = manifests.find((m) => m.kind === 'StatefulSet')!;
  const pod = statefulSet.spec.template.spec;
  const [container] = pod.containers;
  const secretValue = (name: string, key: string): string => {
    const secret = manifests.find((m) => m.kind === 'Secret' && m.metadata.name === name)!;
    return secret.stringData?.[key] ?? Buffer.from(secret.data[key], 'base64').toString();
  };
  const env: Record<string, string> = {};
  for (const from of container.envFrom ?? []) {
    const config = manifests.find((m) => m.kind === 'ConfigMap' && m.metadata.name === from.configMapRef.name)!;
    for (const [name, value] of Object.entries(config.data as Record<string, string>))
      if (/^[A-Z_][A-Z0-9_]*$/.test(name)) env[name] = value;
  }
  for (const variable of container.env) {
    const ref = variable.valueFrom?.secretKeyRef;
    env[variable.name] = ref ? secretValue(ref.name, ref.key) : variable.value;
  }
  return {
    args: container.args,
    env,
    user: pod.securityContext.runAsUser,
    group: pod.securityContext.runAsGroup,
    mounts: Object.fromEntries(container.volumeMounts.map((m: { name: string; mountPath: string }) => [m.name, m.mountPath])),
  };
}

describe("the chart's evaluation layout, run as its pod runs", function () {
  this.timeout(300_000);
  let work: string;
  let child: ChildProcess | undefined;
  let output = '';
  let madeMountPoint: string | undefined;

  before(async () => {
    work = await mkdtemp(join(tmpdir(), 'agentplane-evaluation-'));
  });

  after(async () => {
    if (child) await stopChild(child);
    if (madeMountPoint) await rmdir(madeMountPoint);
    await rm(work, { recursive: true, force: true });
  });

  it('serves the API from agentplane dev as its user on a read-only root, keeping its state on its volume', async () => {
    const [port, metricsPort] = [await freePort(), await freePort()];
    const rendered = await helm(['template', 'ap', chart, '--set', `api.port=${port}`, '--set', `api.metricsPort=${metricsPort}`]);
    assert.equal(rendered.code, 0, rendered.stderr);
    const manifests = parseAllDocuments(rendered.stdout)
      .map((doc) => doc.toJSON())
      .filter((m): m is Manifest => m !== null);
    const pod = podCommand(manifests);
    assert.ok(pod.user > 0, 'the pod runs as root');

    // The volumes: the claim's and the emptyDir, writable by the pod's user alone; a mount point where the
    // claim is mounted, as the kubelet makes one.
    const volume = join(work, 'data');
    const scratch = join(work, 'tmp');
    for (const dir of [volume, scratch]) {
      await mkdir(dir, { mode: 0o700 });
      await chown(dir, pod.user, pod.group);
    }
    // The claim's mount point, made as the kubelet makes one in the container, and removed afterwards.
    if (!existsSync(pod.mounts.data!)) {
      await mkdir(pod.mounts.data!);
      madeMountPoint = pod.mounts.data;
    }
    // What the image holds: its user's name (initdb looks it up) and the Temporal CLI where its ENV says.
    const passwd = join(work, 'passwd');
    await writeFile(
      passwd,
      `${await readFile('/etc/passwd', 'utf8')}agentplane:x:${pod.user}:${pod.group}::/nonexistent:/usr/sbin/nologin\n`,
    );
    await writeFile(join(scratch, 'temporal'), '');
    const imageEnv = { NODE_ENV: 'production', AGENTPLANE_TEMPORAL_BIN: join(pod.mounts.tmp!, 'temporal') };

    // The emptyDir goes over /tmp: a checkout under /tmp is mounted again inside it, where its path leads.
    const checkout = relative(pod.mounts.tmp!, root);
    const underTmp = !checkout.startsWith('..') && !isAbsolute(checkout);
    if (underTmp) await mkdir(join(scratch, checkout), { recursive: true });
    const script = [
      `mount --bind ${passwd} /etc/passwd`,
      `mount --bind ${await realpath(findTool('temporal'))} ${join(scratch, 'temporal')}`,
      `mount --bind ${volume} ${pod.mounts.data}`,
      ...(underTmp ? [`mount --bind ${root} ${join(scratch, checkout)}`] : []),
      `mount --rbind ${scratch} ${pod.mounts.tmp}`,
      'mount -o remount,bind,ro /',
      `exec setpriv --reuid=${pod.user} --regid=${pod.group} --clear-groups --no-new-privs ${process.execPath} dist/cli/agentplane.js ${pod.args.join(' ')}`,
    ].join(' && ');
    const url = `http://127.0.0.1:${port}`;
    const startPod = async (): Promise<ChildProcess> => {
      output = '';
      const started = spawn('unshare', ['--mount', '--propagation', 'private', 'sh', '-c', script], {
        cwd: root,
        env: { PATH: '/usr/local/bin:/usr/bin:/bin', ...imageEnv, ...pod.env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      started.stdout!.on('data', (chunk) => (output = (output + chunk).slice(-20_000)));
      started.stderr!.on('data', (chunk) => (output = (output + chunk).slice(-20_000)));
      // A process that exits fails the wait at once.
      const exited = new Promise<never>((_, reject) =>
        started.once('exit', (code, signal) => reject(new Error(`agentplane dev exited ${code ?? signal}:\n${output}`))),
      );
      exited.catch(() => undefined);
      await Promise.race([
        exited,
        eventually(async () => assert.equal((await fetch(`${url}/readyz`)).status, 200), {
          timeoutMs: 180_000,
          intervalMs: 500,
          message: 'the pod did not become ready',
        }),
      ]);
      // The shell and setpriv exec'd: the pid is agentplane's, and it runs as the pod's user.
      const status = await readFile(`/proc/${started.pid}/status`, 'utf8');
      assert.match(status, new RegExp(`^Uid:\\s+${pod.user}\\s`, 'm'));
      return started;
    };
    const stopPod = async (running: ChildProcess) => {
      await stopChild(running);
      assert.ok(
        running.exitCode === 0 || running.signalCode === 'SIGTERM',
        `agentplane dev ended ${running.exitCode ?? running.signalCode}:\n${output}`,
      );
      assert.doesNotMatch(output, /read-only file system|EROFS/i);
    };

    child = await startPod();

    const admin = new ApiClient(url, pod.env.AGENTPLANE_ADMIN_KEY!);
    const agent = await admin.post('/v1/agents', { name: 'first', instructions: 'Answer briefly.', model: 'gpt-4.1-mini' });
    assert.equal(agent.status, 201, JSON.stringify(agent.body));
    const uploaded = await admin.upload({
      file: { data: Buffer.from('Agentplane keeps its state on the volume.'), filename: 'notes.txt', type: 'text/plain' },
      purpose: 'context',
    });
    assert.equal(uploaded.status, 200, JSON.stringify(uploaded.body));
    await eventually(async () => assert.equal((await admin.get(`/v1/files/${uploaded.body.id}`)).body.status, 'processed'), {
      timeoutMs: 60_000,
      intervalMs: 250,
      message: 'the uploaded file was not processed',
    });
    assert.equal((await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).status, 200);

    await stopPod(child);
    child = undefined;

    // Started again on the same volume, as after a reschedule: what it held is there.
    child = await startPod();
    assert.equal((await admin.get(`/v1/agents/${agent.body.id}`)).status, 200);
    assert.equal((await admin.get(`/v1/files/${uploaded.body.id}`)).body.status, 'processed');
    const content = await admin.get(`/v1/files/${uploaded.body.id}/content`);
    assert.equal(content.body.data[0].text, 'Agentplane keeps its state on the volume.');
    await stopPod(child);
    child = undefined;
    // The uploaded bytes are on the volume, with the database and Temporal's state.
    const kept = await readdir(volume, { recursive: true });
    const blobs = await Promise.all(
      kept.filter((path) => path.startsWith('blobs/')).map((path) => readFile(join(volume, path)).catch(() => Buffer.alloc(0))),
    );
    assert.ok(
      blobs.some((bytes) => bytes.toString() === 'Agentplane keeps its state on the volume.'),
      kept.join(', '),
    );
  });
});
