/**
 * The controller's platform API key: AGENTPLANE_API_KEY, or the `api-key` of the Secret AGENTPLANE_API_KEY_SECRET
 * names. A key from a Secret is read again whenever the platform refuses the one in hand, so a rotated Secret
 * takes effect without a restart.
 */
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { ControllerConfigError, type ControllerConfig } from './config.js';

// However many passes the refusal fails at once, the Secret is read at most this often.
const REREAD_INTERVAL_MS = 2_000;

export class ApiKeySource {
  private key: string;
  private lastRead = 0;
  private reading: Promise<boolean> | undefined;

  private constructor(
    private readonly config: ControllerConfig,
    private readonly kc: KubeConfig,
    key: string,
  ) {
    this.key = key;
    this.lastRead = Date.now();
  }

  static async load(config: ControllerConfig, kc: KubeConfig): Promise<ApiKeySource> {
    const key = config.apiKey ?? (await readSecretKey(config, kc));
    return new ApiKeySource(config, kc, key);
  }

  get current(): string {
    return this.key;
  }

  /** Where the key comes from, as an operator fixes it. */
  get origin(): string {
    const secret = this.config.apiKeySecret;
    return secret ? `the Secret ${secret.namespace}/${secret.name} (key api-key)` : 'AGENTPLANE_API_KEY';
  }

  /** Reads the Secret again after a refusal; whether it now holds another key. */
  reread(): Promise<boolean> {
    if (this.config.apiKey || Date.now() - this.lastRead < REREAD_INTERVAL_MS) return Promise.resolve(false);
    this.reading ??= readSecretKey(this.config, this.kc)
      .then((key) => {
        const changed = key !== this.key;
        this.key = key;
        return changed;
      })
      .catch(() => false) // the Secret unreadable for now: keep the key in hand; the refusal is reported
      .finally(() => {
        this.lastRead = Date.now();
        this.reading = undefined;
      });
    return this.reading;
  }
}

async function readSecretKey(config: ControllerConfig, kc: KubeConfig): Promise<string> {
  const { namespace, name } = config.apiKeySecret!;
  const secret = await kc
    .makeApiClient(CoreV1Api)
    .readNamespacedSecret({ namespace, name })
    .catch((err: { code?: number }) => {
      throw new ControllerConfigError(
        `Could not read the Secret ${namespace}/${name} (AGENTPLANE_API_KEY_SECRET): ${err.code ?? ''} ${String(err)}`.trim(),
      );
    });
  const encoded = secret.data?.['api-key'];
  if (!encoded) throw new ControllerConfigError(`The Secret ${namespace}/${name} (AGENTPLANE_API_KEY_SECRET) has no key api-key.`);
  return Buffer.from(encoded, 'base64').toString('utf8').trim();
}
