/**
 * A real Kubernetes API server for the suites: etcd and kube-apiserver on random loopback ports, started the
 * way controller-runtime's envtest does it (generated certificates, RBAC on, a service-account signing key,
 * an admin client certificate in system:masters, no endpoint reconciler). There is no controller-manager and
 * no kubelet: resources are stored and validated, pods never run and nothing is garbage-collected.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { request } from 'node:https';
import { KubeConfig } from '@kubernetes/client-node';
import { freePort, stopChild } from '../../cli/embedded.js';
import { findTool } from '../../cli/tools.js';
import { eventually } from './eventually.js';
import { scratch } from './services.js';

const run = promisify(execFile);

export interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface KubeCluster {
  /** `https://127.0.0.1:<port>`. */
  server: string;
  /** etcd's client URL (its HTTP gateway answers `/v3/...`). */
  etcdUrl: string;
  /** A kubeconfig file with the cluster's admin (system:masters). */
  kubeconfig: string;
  /** A client configuration for the admin. */
  kubeConfig(): KubeConfig;
  /** kubectl against the cluster as the admin, or with another kubeconfig; never throws on a non-zero exit. */
  kubectl(args: string[], options?: { input?: string; kubeconfig?: string }): Promise<CommandResult>;
  /**
   * A kubeconfig file that authenticates as a ServiceAccount with a token the API server issued (the
   * account is created if it does not exist), so what that account may do is decided by RBAC alone.
   */
  serviceAccountKubeconfig(namespace: string, name: string): Promise<string>;
  /** Stops the API server (etcd keeps the data), and starts it again on the same port. */
  stopApiServer(): Promise<void>;
  startApiServer(): Promise<void>;
  stop(): Promise<void>;
}

/** Starts a cluster of its own in a fresh directory; the caller stops it. */
export async function startKubeCluster(name = 'kube'): Promise<KubeCluster> {
  const dir = join(await scratch, `${name}-${process.pid}-${Date.now()}`);
  await mkdir(dir, { recursive: true });
  const pki = await makeCertificates(join(dir, 'pki'));
  const etcd = await startEtcd(join(dir, 'etcd'));
  const port = await freePort();
  const server = `https://127.0.0.1:${port}`;
  let apiServer: ChildProcess | undefined;

  const startApiServer = async () => {
    const child = spawn(
      findTool('kube-apiserver'),
      [
        `--etcd-servers=${etcd.url}`,
        '--bind-address=127.0.0.1',
        '--advertise-address=127.0.0.1',
        `--secure-port=${port}`,
        `--cert-dir=${pki.dir}`,
        `--tls-cert-file=${pki.serverCert}`,
        `--tls-private-key-file=${pki.serverKey}`,
        `--client-ca-file=${pki.caCert}`,
        '--authorization-mode=RBAC',
        `--service-account-key-file=${pki.serviceAccountPublicKey}`,
        `--service-account-signing-key-file=${pki.serviceAccountKey}`,
        '--service-account-issuer=https://kubernetes.default.svc',
        '--service-cluster-ip-range=10.0.0.0/24',
        '--endpoint-reconciler-type=none',
        '--allow-privileged=true',
        '--disable-admission-plugins=ServiceAccount',
        '--v=0',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    const stderr: string[] = [];
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr.push(chunk.toString());
      if (stderr.length > 200) stderr.shift();
    });
    apiServer = child;
    await eventually(
      async () => {
        if (child.exitCode !== null) throw new Error(`kube-apiserver exited with ${child.exitCode}: ${stderr.join('').slice(-2000)}`);
        const status = await readyzStatus(port, pki);
        if (status !== 200) throw new Error(`kube-apiserver /readyz answered ${status}`);
      },
      { timeoutMs: 60_000, intervalMs: 100, message: 'kube-apiserver did not become ready' },
    ).catch(async (err) => {
      await stopChild(child);
      throw err;
    });
  };

  await startApiServer();
  const kubeconfig = join(dir, 'admin.kubeconfig');
  await writeFile(
    kubeconfig,
    kubeconfigYaml(server, pki.caPem, { 'client-certificate-data': b64(pki.adminCertPem), 'client-key-data': b64(pki.adminKeyPem) }),
  );

  const kubectl = async (args: string[], options: { input?: string; kubeconfig?: string } = {}): Promise<CommandResult> => {
    return new Promise((resolve) => {
      const child = spawn(findTool('kubectl'), ['--kubeconfig', options.kubeconfig ?? kubeconfig, ...args], {
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      child.on('close', (code) => resolve({ code: code ?? 1, stdout, stderr }));
      child.stdin.end(options.input ?? '');
    });
  };

  const serviceAccountKubeconfig = async (namespace: string, account: string): Promise<string> => {
    await ensure(kubectl(['create', 'namespace', namespace]), /AlreadyExists|already exists/);
    await ensure(kubectl(['create', 'serviceaccount', account, '-n', namespace]), /AlreadyExists|already exists/);
    const token = await kubectl(['create', 'token', account, '-n', namespace, '--duration=2h']);
    if (token.code !== 0) throw new Error(`kubectl create token failed: ${token.stderr}`);
    const file = join(dir, `${namespace}-${account}.kubeconfig`);
    await writeFile(
      file,
      kubeconfigYaml(server, pki.caPem, { token: token.stdout.trim() }, `system:serviceaccount:${namespace}:${account}`),
    );
    return file;
  };

  return {
    server,
    etcdUrl: etcd.url,
    kubeconfig,
    kubeConfig() {
      const config = new KubeConfig();
      config.loadFromFile(kubeconfig);
      return config;
    },
    kubectl,
    serviceAccountKubeconfig,
    stopApiServer: async () => {
      if (apiServer) await stopChild(apiServer);
    },
    startApiServer,
    stop: async () => {
      if (apiServer) await stopChild(apiServer);
      await etcd.stop();
    },
  };
}

/** Applies every CRD in `crds/` and waits until the API server serves them. */
export async function installCrds(cluster: KubeCluster, crdsDir: string): Promise<void> {
  const applied = await cluster.kubectl(['apply', '--server-side', '-f', crdsDir]);
  if (applied.code !== 0) throw new Error(`installing the CRDs failed: ${applied.stderr}`);
  const established = await cluster.kubectl(['wait', '--for=condition=Established', '--timeout=60s', '-f', crdsDir]);
  if (established.code !== 0) throw new Error(`the CRDs were not established: ${established.stderr}`);
}

async function ensure(result: Promise<CommandResult>, tolerated: RegExp): Promise<void> {
  const { code, stderr } = await result;
  if (code !== 0 && !tolerated.test(stderr)) throw new Error(stderr);
}

async function startEtcd(dir: string): Promise<{ url: string; stop(): Promise<void> }> {
  const clientPort = await freePort();
  const peerPort = await freePort();
  const url = `http://127.0.0.1:${clientPort}`;
  const child = spawn(
    findTool('etcd'),
    [
      `--data-dir=${dir}`,
      `--listen-client-urls=${url}`,
      `--advertise-client-urls=${url}`,
      `--listen-peer-urls=http://127.0.0.1:${peerPort}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
      `--initial-cluster=default=http://127.0.0.1:${peerPort}`,
      '--unsafe-no-fsync',
      '--log-level=error',
    ],
    { stdio: 'ignore' },
  );
  await eventually(
    async () => {
      if (child.exitCode !== null) throw new Error(`etcd exited with ${child.exitCode}`);
      const response = await fetch(`${url}/health`);
      if (!response.ok) throw new Error(`etcd health ${response.status}`);
    },
    { timeoutMs: 30_000, intervalMs: 50, message: 'etcd did not start' },
  ).catch(async (err) => {
    await stopChild(child);
    throw err;
  });
  return { url, stop: () => stopChild(child) };
}

interface Certificates {
  dir: string;
  caCert: string;
  caPem: string;
  serverCert: string;
  serverKey: string;
  adminCertPem: string;
  adminKeyPem: string;
  serviceAccountKey: string;
  serviceAccountPublicKey: string;
}

/** A CA, the API server's serving certificate, an admin client certificate and a service-account key pair. */
async function makeCertificates(dir: string): Promise<Certificates> {
  await mkdir(dir, { recursive: true });
  const at = (file: string) => join(dir, file);
  const openssl = (args: string[]) => run('openssl', args, { cwd: dir });
  await openssl([
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'ca.key',
    '-out',
    'ca.crt',
    '-days',
    '2',
    '-subj',
    '/CN=agentplane-test-ca',
  ]);
  const signed = async (name: string, subject: string, extensions: string) => {
    await openssl(['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subject]);
    await writeFile(at(`${name}.ext`), extensions);
    await openssl([
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.crt',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      `${name}.crt`,
      '-days',
      '2',
      '-extfile',
      `${name}.ext`,
    ]);
  };
  await signed('server', '/CN=kube-apiserver', 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n');
  await signed('admin', '/O=system:masters/CN=admin', 'extendedKeyUsage=clientAuth\n');
  await openssl(['genrsa', '-out', 'sa.key', '2048']);
  await openssl(['rsa', '-in', 'sa.key', '-pubout', '-out', 'sa.pub']);
  return {
    dir,
    caCert: at('ca.crt'),
    caPem: await readFile(at('ca.crt'), 'utf8'),
    serverCert: at('server.crt'),
    serverKey: at('server.key'),
    adminCertPem: await readFile(at('admin.crt'), 'utf8'),
    adminKeyPem: await readFile(at('admin.key'), 'utf8'),
    serviceAccountKey: at('sa.key'),
    serviceAccountPublicKey: at('sa.pub'),
  };
}

function readyzStatus(port: number, pki: Certificates): Promise<number> {
  return new Promise((resolve) => {
    const req = request(
      { host: '127.0.0.1', port, path: '/readyz', ca: pki.caPem, cert: pki.adminCertPem, key: pki.adminKeyPem, timeout: 2_000 },
      (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      },
    );
    req.on('error', () => resolve(0));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

function b64(text: string): string {
  return Buffer.from(text).toString('base64');
}

function kubeconfigYaml(server: string, caPem: string, user: Record<string, string>, userName = 'admin'): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'test', cluster: { server, 'certificate-authority-data': b64(caPem) } }],
    users: [{ name: userName, user }],
    contexts: [{ name: 'test', context: { cluster: 'test', user: userName, namespace: 'default' } }],
    'current-context': 'test',
  });
}
