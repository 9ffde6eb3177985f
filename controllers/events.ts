/**
 * Kubernetes Events on the resources the controller reconciles, as `kubectl describe` shows them. The same
 * reason and message on the same object within ten minutes bumps the count of the one event instead of
 * writing another. Recording never fails a reconcile: a lost event is logged.
 */
import { randomBytes } from 'node:crypto';
import { CoreV1Api, PatchStrategy, setHeaderOptions, type KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';

export interface ObjectRef {
  apiVersion: string;
  kind: string;
  namespace: string;
  name: string;
  uid: string;
}

const REPEAT_WINDOW_MS = 10 * 60_000;
const MERGE_PATCH = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

export class EventRecorder {
  private readonly core: CoreV1Api;
  private readonly recent = new Map<string, { name: string; count: number; at: number }>();

  constructor(
    kc: KubeConfig,
    private readonly component: string,
    private readonly log: Logger,
  ) {
    this.core = kc.makeApiClient(CoreV1Api);
  }

  warning(object: ObjectRef, reason: string, message: string): Promise<void> {
    return this.record(object, 'Warning', reason, message);
  }

  normal(object: ObjectRef, reason: string, message: string): Promise<void> {
    return this.record(object, 'Normal', reason, message);
  }

  private async record(object: ObjectRef, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
    const key = `${object.uid}\u0000${type}\u0000${reason}\u0000${message}`;
    const now = new Date();
    const seen = this.recent.get(key);
    try {
      if (seen && now.getTime() - seen.at < REPEAT_WINDOW_MS) {
        seen.count += 1;
        seen.at = now.getTime();
        await this.core.patchNamespacedEvent(
          { namespace: object.namespace, name: seen.name, body: { count: seen.count, lastTimestamp: now } },
          MERGE_PATCH,
        );
        return;
      }
      const name = `${object.name}.${randomBytes(8).toString('hex')}`;
      await this.core.createNamespacedEvent({
        namespace: object.namespace,
        body: {
          metadata: { name, namespace: object.namespace },
          involvedObject: {
            apiVersion: object.apiVersion,
            kind: object.kind,
            namespace: object.namespace,
            name: object.name,
            uid: object.uid,
          },
          type,
          reason,
          message: message.slice(0, 1024),
          source: { component: this.component },
          reportingComponent: this.component,
          firstTimestamp: now,
          lastTimestamp: now,
          count: 1,
        },
      });
      this.recent.set(key, { name, count: 1, at: now.getTime() });
      if (this.recent.size > 10_000) this.recent.delete(this.recent.keys().next().value!);
    } catch (err) {
      this.recent.delete(key);
      this.log.warn({ err, reason, object: `${object.namespace}/${object.name}` }, 'could not record an event');
    }
  }
}
