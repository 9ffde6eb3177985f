/**
 * The API's enums as lists the forms can offer. The types come from the OpenAPI document; the checks below
 * fail to compile when the document gains a value these lists lack.
 */
import type { Schemas } from '../api';

export type EventType = Schemas['EventType'];
export type Scope = Schemas['Scope'];

export const EVENT_TYPES = [
  'file.processed',
  'file.failed',
  'file.deleted',
  'run.completed',
  'run.failed',
  'run.cancelled',
  'network_run.completed',
  'network_run.failed',
  'network_run.cancelled',
  'webhook_endpoint.disabled',
  'budget.threshold_reached',
  'approval.requested',
  'approval.resolved',
  'thread.created',
  'thread.updated',
  'thread.deleted',
  'memory.created',
  'memory.superseded',
  'memory.deleted',
] as const satisfies readonly EventType[];

export const SCOPES = [
  'admin',
  'agents:read',
  'agents:write',
  'agents:run',
  'files:read',
  'files:write',
  'analytics:read',
  'events:read',
  'webhooks:read',
  'webhooks:write',
  'approvals:read',
  'approvals:write',
  'datasets:read',
  'datasets:write',
  'experiments:read',
  'experiments:write',
  'schedules:read',
  'schedules:write',
] as const satisfies readonly Scope[];

/** What the scopes docs/api.md explains allow; the others say it in their names. */
export const SCOPE_HELP: Partial<Record<Scope, string>> = {
  admin: 'every scope of the project',
  'events:read': 'the event log',
  'webhooks:read': 'endpoints and their delivery logs',
  'webhooks:write': 'register, change, delete, rotate, redeliver',
  'approvals:read': 'tool calls waiting for a person, and the decisions',
  'approvals:write': 'decide waiting tool calls',
  'datasets:read': 'datasets and their items',
  'datasets:write': 'create, import, add and delete them',
  'experiments:read': 'experiments and their items',
  'experiments:write': 'start and cancel experiments (with agents:run)',
  'schedules:read': 'schedules and their latest runs',
  'schedules:write': 'create, change, pause, delete (with agents:run)',
};

/** The audit log's actions (docs/api.md, "Audit log"), offered as suggestions for its filter. */
export const AUDIT_ACTIONS = [
  'agent.create',
  'agent.delete',
  'agent.update',
  'api_key.create',
  'api_key.revoke',
  'api_key.update',
  'approval.decide',
  'budget.create',
  'budget.delete',
  'budget.update',
  'dataset.create',
  'dataset.delete',
  'dataset.import',
  'dataset_item.create',
  'dataset_item.delete',
  'experiment.cancel',
  'experiment.create',
  'file.create',
  'file.delete',
  'memory.delete',
  'network.create',
  'network.delete',
  'network.update',
  'project.create',
  'run.cancel',
  'run.create',
  'schedule.create',
  'schedule.delete',
  'schedule.update',
  'session.create',
  'session.end',
  'subject.forget',
  'thread.create',
  'thread.delete',
  'webhook_delivery.redeliver',
  'webhook_endpoint.create',
  'webhook_endpoint.delete',
  'webhook_endpoint.disable',
  'webhook_endpoint.rotate_secret',
  'webhook_endpoint.update',
] as const;

type Every<Listed, All> = [All] extends [Listed] ? true : false;
const everyEventType: Every<(typeof EVENT_TYPES)[number], EventType> = true;
const everyScope: Every<(typeof SCOPES)[number], Scope> = true;
void everyEventType;
void everyScope;
