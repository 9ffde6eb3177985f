/**
 * A cached list+watch of one resource, across every namespace or a chosen few, built on client-node's
 * informer (which re-lists after 410 Gone and resumes a watch that ends). A watch that fails (the API server
 * restarting, a dropped connection, a list that cannot be made) is started again with backoff, forever.
 */
import {
  makeInformer,
  type Informer,
  type KubeConfig,
  type KubernetesListObject,
  type KubernetesObject,
  type ObjectCache,
} from '@kubernetes/client-node';
import type { Logger } from 'pino';

export interface WatchedResource<T extends KubernetesObject> {
  kind: string;
  /** The collection's path: all namespaces (namespace undefined) or one. */
  path(namespace?: string): string;
  list(namespace?: string): Promise<KubernetesListObject<T>>;
  labelSelector?: string;
}

const FIRST_RETRY_MS = 500;
const MAX_RETRY_MS = 30_000;

export class ResourceWatch<T extends KubernetesObject> {
  private readonly informers: (Informer<T> & ObjectCache<T>)[] = [];
  private readonly started = new Set<number>();
  private readonly handlers: ((object: T) => void)[] = [];
  private stopped = false;

  constructor(
    kc: KubeConfig,
    private readonly resource: WatchedResource<T>,
    namespaces: string[],
    private readonly log: Logger,
    private readonly observe: { restarted(kind: string): void; relisted(kind: string): void } = { restarted: () => {}, relisted: () => {} },
  ) {
    const scopes = namespaces.length > 0 ? namespaces : [undefined];
    for (const namespace of scopes) {
      // The informer lists once, then only when its resource version is gone (410): count those.
      let listed = false;
      const list = () => {
        if (listed) this.observe.relisted(resource.kind);
        listed = true;
        return resource.list(namespace);
      };
      const informer = makeInformer<T>(kc, resource.path(namespace), list, resource.labelSelector);
      for (const verb of ['add', 'update', 'delete'] as const)
        informer.on(verb, (object) => this.handlers.forEach((handle) => handle(object)));
      this.informers.push(informer);
    }
  }

  /** Called for every object added, changed or deleted (and for each on every re-list). */
  onChange(handle: (object: T) => void): void {
    this.handlers.push(handle);
  }

  /** Whether every namespace's first list has arrived. */
  get synced(): boolean {
    return this.started.size === this.informers.length;
  }

  get(namespace: string, name: string): T | undefined {
    for (const informer of this.informers) {
      const found = informer.get(name, namespace);
      if (found) return found;
    }
    return undefined;
  }

  list(): T[] {
    return this.informers.flatMap((informer) => [...informer.list()]);
  }

  /** Starts every watch; resolves once each has listed, retrying those that cannot yet. */
  async start(): Promise<void> {
    await Promise.all(this.informers.map((informer, index) => this.keepRunning(informer, index)));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.informers.map((informer) => informer.stop()));
  }

  private keepRunning(informer: Informer<T> & ObjectCache<T>, index: number): Promise<void> {
    let delay = FIRST_RETRY_MS;
    const retry = () => {
      setTimeout(attempt, delay);
      delay = Math.min(MAX_RETRY_MS, delay * 2);
    };
    let synced: () => void;
    const attempt = async () => {
      if (this.stopped) return synced();
      try {
        // A failed list or watch does not reject: it arrives as an 'error' event, which retries.
        await informer.start();
      } catch (err) {
        this.log.warn({ err: String(err), kind: this.resource.kind }, 'could not start the watch; trying again');
        return retry();
      }
      // Listed: the cache holds a resource version.
      if ((informer as unknown as { latestResourceVersion(): string }).latestResourceVersion() !== '') {
        this.started.add(index);
        delay = FIRST_RETRY_MS;
        synced();
      }
    };
    informer.on('error', (err) => {
      if (this.stopped) return;
      this.observe.restarted(this.resource.kind);
      this.log.warn({ err: String(err), kind: this.resource.kind }, 'watch failed; starting it again');
      retry();
    });
    return new Promise((resolve) => {
      synced = resolve;
      void attempt();
    });
  }
}
