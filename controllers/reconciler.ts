/**
 * One pass over one resource, the same for both kinds: the finalizer first, then the platform record made
 * equal to the spec (created, found again, or updated), then the status — written only when it changed. A
 * deleted resource's record is deleted before the finalizer comes off, so no record outlives its resource.
 */
import { isDeepStrictEqual } from 'node:util';
import { CustomObjectsApi, PatchStrategy, setHeaderOptions, type KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { PlatformRefusedKey, PlatformRejected, PlatformUnavailable, type ManagedResource } from './platform.js';
import type { EventRecorder } from './events.js';
import {
  FINALIZER,
  GROUP,
  PLURAL,
  VERSION,
  withConditions,
  type Condition,
  type Kind,
  type Resource,
  type ResourceStatus,
} from './resources.js';

/** Why the record cannot be made yet (a member is missing or not Ready): not an error, a state. */
export interface Blocked {
  reason: 'MemberNotFound' | 'MemberNotReady';
  message: string;
}

/** A platform record as far as the pass needs it: its id, and the resource it was made for. */
export interface OwnedRecord {
  id: string;
  managed_resource: ManagedResource | null;
}

/** What a kind brings to the pass: how to build, find, compare, write and delete its record. */
export interface KindHandler<Spec, Body, PlatformRecord extends OwnedRecord> {
  kind: Kind;
  /** The API request body for the spec, or why it cannot be built yet. */
  desired(resource: Resource<Spec>): Promise<Body | Blocked>;
  get(id: string): Promise<PlatformRecord | null>;
  findByUid(uid: string): Promise<PlatformRecord | null>;
  create(body: Body, managed: ManagedResource): Promise<PlatformRecord | null>;
  update(id: string, body: Body): Promise<PlatformRecord | null>;
  /** Whether the record differs from the body (drift, or a changed spec). */
  differs(record: PlatformRecord, body: Body): boolean;
  delete(id: string): Promise<void>;
  /** Children in Kubernetes (a worker pool's Deployment), brought in line after the record. */
  afterSync?(resource: Resource<Spec>, record: PlatformRecord): Promise<void>;
  /** Records that hang off the record (its schedules), brought in line after it; what the status shows of them. */
  syncDependents?(resource: Resource<Spec>, record: PlatformRecord): Promise<Pick<ResourceStatus, 'schedules'>>;
  /** Children removed before the finalizer comes off. */
  beforeRemoval?(resource: Resource<Spec>): Promise<void>;
}

export interface ReconcileDeps {
  kc: KubeConfig;
  events: EventRecorder;
  log: Logger;
}

const MERGE_PATCH = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

export async function reconcile<Spec, Body, PlatformRecord extends OwnedRecord>(
  deps: ReconcileDeps,
  handler: KindHandler<Spec, Body, PlatformRecord>,
  resource: Resource<Spec>,
): Promise<void> {
  const objects = deps.kc.makeApiClient(CustomObjectsApi);
  const { namespace, name, uid } = resource.metadata;
  const target = { group: GROUP, version: VERSION, namespace, plural: PLURAL[handler.kind], name };
  const ref = { apiVersion: `${GROUP}/${VERSION}`, kind: handler.kind, namespace, name, uid };
  const finalizers = resource.metadata.finalizers ?? [];

  const writeStatus = async (status: ResourceStatus) => {
    if (sameStatus(resource.status, status)) return;
    await objects.patchNamespacedCustomObjectStatus({ ...target, body: { status } }, MERGE_PATCH);
  };

  /**
   * The resource's own record. `status.id` is only a hint: anyone who may write the status can point it at
   * another record, so a record counts only when it was made for this very resource; otherwise it is
   * looked up by the resource's uid.
   */
  const ownRecord = async (): Promise<PlatformRecord | null> => {
    const hinted = resource.status?.id ? await handler.get(resource.status.id) : null;
    if (hinted && isRecordOf(hinted, handler.kind, resource)) return hinted;
    if (hinted)
      deps.log.warn(
        { kind: handler.kind, namespace, name, id: hinted.id },
        'status.id names a record this resource does not manage; ignored',
      );
    return handler.findByUid(uid);
  };

  if (resource.metadata.deletionTimestamp) {
    if (!finalizers.includes(FINALIZER)) return;
    try {
      const record = await ownRecord();
      if (record) await handler.delete(record.id);
      await handler.beforeRemoval?.(resource);
    } catch (err) {
      // Retried with backoff for as long as it fails; the condition says what would end the wait.
      const refused = err instanceof PlatformRefusedKey;
      const message =
        `Waiting to delete the platform record: ${(err as Error).message}` +
        (refused ? ` ${keepRecordHint(handler.kind, namespace, name)}` : '');
      await deps.events.warning(ref, refused ? 'ApiKeyRefused' : 'DeleteFailed', message);
      await writeStatus(statusFor(resource, { Ready: ['False', refused ? 'ApiKeyRefused' : 'Deleting', message] })).catch(() => {});
      throw err;
    }
    await objects.patchNamespacedCustomObject(
      {
        ...target,
        body: { metadata: { finalizers: finalizers.filter((f) => f !== FINALIZER), resourceVersion: resource.metadata.resourceVersion } },
      },
      MERGE_PATCH,
    );
    deps.log.info({ kind: handler.kind, namespace, name }, 'platform record deleted; finalizer removed');
    return;
  }

  if (!finalizers.includes(FINALIZER)) {
    // With resourceVersion: a resource changed meanwhile answers 409 and the pass is retried on the new one.
    await objects.patchNamespacedCustomObject(
      { ...target, body: { metadata: { finalizers: [...finalizers, FINALIZER], resourceVersion: resource.metadata.resourceVersion } } },
      MERGE_PATCH,
    );
  }

  let record: PlatformRecord | null;
  let dependents: Pick<ResourceStatus, 'schedules'>;
  try {
    const desired = await handler.desired(resource);
    if (isBlocked(desired)) {
      await writeStatus(
        statusFor(resource, { Accepted: ['True', 'Valid', 'The spec is valid.'], Ready: ['False', desired.reason, desired.message] }),
      );
      return;
    }
    // A status write lost after the record was made, or a record deleted through the API: find or make it again.
    record = await ownRecord();
    if (!record) {
      record = await handler.create(desired, { kind: handler.kind, namespace, name, uid });
      deps.log.info({ kind: handler.kind, namespace, name, id: record?.id }, 'platform record created');
    } else if (handler.differs(record, desired)) {
      record = await handler.update(record.id, desired);
      deps.log.info({ kind: handler.kind, namespace, name, id: record?.id }, 'platform record updated');
    }
    if (!record) throw new PlatformUnavailable('the platform record vanished while it was written; trying again');
    await handler.afterSync?.(resource, record);
    dependents = (await handler.syncDependents?.(resource, record)) ?? {};
  } catch (err) {
    if (err instanceof PlatformRefusedKey) {
      await deps.events.warning(ref, 'ApiKeyRefused', err.message);
      await writeStatus(statusFor(resource, { Ready: ['False', 'ApiKeyRefused', err.message] })).catch(() => {});
      throw err; // nothing is wrong with the spec: retried with backoff until the key works
    }
    if (err instanceof PlatformRejected) {
      await deps.events.warning(ref, 'ApiRejected', err.message);
      await writeStatus(
        statusFor(resource, { Accepted: ['False', 'InvalidSpec', err.message], Ready: ['False', 'ApiRejected', err.message] }),
      );
      return; // the spec has to change; the resync tries again meanwhile
    }
    if (err instanceof PlatformUnavailable) {
      await deps.events.warning(ref, 'ApiUnavailable', err.message);
      await writeStatus(statusFor(resource, { Ready: ['False', 'ApiUnavailable', err.message] })).catch(() => {});
    }
    throw err;
  }
  const what = handler.kind === 'Agent' ? 'agent' : 'network';
  await writeStatus(
    statusFor(
      resource,
      {
        Accepted: ['True', 'Valid', 'The spec is valid.'],
        Ready: ['True', 'Reconciled', `The platform's ${what} ${record.id} matches the spec.`],
      },
      record.id,
      dependents,
    ),
  );
}

/**
 * Whether the platform record differs from the request body in any field the body sets: what a spec change
 * or drift looks like. The API returns a description never set as null, which the body writes as ''.
 */
export function differsFrom(record: object, body: object): boolean {
  const current = record as Record<string, unknown>;
  const plain = (value: unknown) => JSON.parse(JSON.stringify(value ?? null)) as unknown;
  return Object.entries(body).some(([field, wanted]) => {
    const value = field === 'description' ? (current[field] ?? '') : current[field];
    return !isDeepStrictEqual(plain(value), plain(wanted));
  });
}

/** How an operator lets the resource go without the platform: its record is then left behind. */
function keepRecordHint(kind: Kind, namespace: string, name: string): string {
  return (
    `To let the resource go without deleting its platform record (delete that through the API later), remove the finalizer: ` +
    `kubectl patch ${PLURAL[kind]}.${GROUP} ${name} -n ${namespace} --type=json -p '[{"op":"remove","path":"/metadata/finalizers"}]'`
  );
}

/** Whether the record was made for this resource: the same uid, kind and namespace. */
export function isRecordOf(record: OwnedRecord, kind: Kind, resource: Resource<unknown>): boolean {
  const managed = record.managed_resource;
  return managed?.uid === resource.metadata.uid && managed.kind === kind && managed.namespace === resource.metadata.namespace;
}

function isBlocked(value: unknown): value is Blocked {
  return (
    typeof value === 'object' &&
    value !== null &&
    'reason' in value &&
    (value.reason === 'MemberNotFound' || value.reason === 'MemberNotReady')
  );
}

type ConditionValue = [status: Condition['status'], reason: string, message: string];

/** The next status: the given conditions at this generation; a condition not given keeps its last value. */
function statusFor(
  resource: Resource<unknown>,
  set: Partial<Record<Condition['type'], ConditionValue>>,
  id = resource.status?.id,
  dependents: Pick<ResourceStatus, 'schedules'> = { schedules: resource.status?.schedules },
): ResourceStatus {
  const generation = resource.metadata.generation;
  const conditions = (['Accepted', 'Ready'] as const).map((type) => {
    const given = set[type];
    if (given) return { type, status: given[0], reason: given[1], message: given[2], observedGeneration: generation };
    const kept = resource.status?.conditions?.find((c) => c.type === type);
    return kept
      ? { ...kept }
      : { type, status: 'Unknown' as const, reason: 'Reconciling', message: 'Not reconciled yet.', observedGeneration: generation };
  });
  const schedules = dependents.schedules && dependents.schedules.length > 0 ? { schedules: dependents.schedules } : {};
  return withConditions(resource.status, { id, observedGeneration: generation, ...schedules }, conditions);
}

function sameStatus(a: ResourceStatus | undefined, b: ResourceStatus): boolean {
  const comparable = (s: ResourceStatus | undefined) =>
    JSON.stringify({
      id: s?.id,
      observedGeneration: s?.observedGeneration,
      schedules: s?.schedules ?? [],
      conditions: (s?.conditions ?? []).map((c) => [c.type, c.status, c.reason, c.message, c.observedGeneration, c.lastTransitionTime]),
    });
  return comparable(a) === comparable(b);
}
