/**
 * What a run needs before its first model call: its attachments ready, the model (or, for `auto`, the
 * ordered candidates and why), and the tools offered to the model.
 */
import { setTimeout as delay } from 'node:timers/promises';
import type { Db } from '../../records/db.js';
import { attachmentsOf, type FileRecord } from '../../records/files.js';
import type { RunError, RunRecord } from '../../records/runs.js';
import type { AgentDefinition } from '../../records/agents.js';
import type { ModelCatalogue } from '../../models/catalogue.js';
import { routeAuto } from '../../models/routing.js';

// A file still being extracted is waited for this long, then the run fails saying so.
const ATTACHMENT_WAIT_MS = 60_000;
const ATTACHMENT_POLL_MS = 500;

export class RunRefused extends Error {
  constructor(readonly error: RunError) {
    super(error.message);
  }
}

/** The run's attachments once none is processing; refuses the run if one failed or stays processing. */
export async function readyAttachments(db: Db, run: RunRecord, heartbeat: () => void, signal: AbortSignal): Promise<FileRecord[]> {
  const deadline = Date.now() + ATTACHMENT_WAIT_MS;
  for (;;) {
    const files = await attachmentsOf(db, run.project_id, run.file_ids);
    const missing = run.file_ids.filter((id) => !files.some((f) => f.id === id));
    if (missing.length > 0)
      throw new RunRefused({ code: 'attachment_not_found', message: `Attachment ${missing[0]} was deleted before the run started.` });
    const failed = files.find((f) => f.status === 'failed');
    if (failed) {
      throw new RunRefused({
        code: 'attachment_failed',
        message: `Attachment ${failed.id} could not be extracted: ${failed.last_error?.message ?? 'unknown error'}.`,
      });
    }
    const processing = files.find((f) => f.status === 'processing');
    if (!processing) return files;
    if (Date.now() > deadline) {
      throw new RunRefused({
        code: 'attachment_not_ready',
        message: `Attachment ${processing.id} was still processing after ${ATTACHMENT_WAIT_MS / 1000} s.`,
      });
    }
    heartbeat();
    await delay(ATTACHMENT_POLL_MS, undefined, { signal });
  }
}

export interface ModelChoice {
  candidates: string[];
  reason: string;
}

/** The model a run uses, or for `auto` the candidates in order; refuses a run no configured model can serve. */
export function chooseModels(catalogue: ModelCatalogue, run: RunRecord, agent: AgentDefinition, attachments: FileRecord[]): ModelChoice {
  if (run.model !== 'auto') {
    const model = catalogue.find(run.model);
    if (!model)
      throw new RunRefused({ code: 'model_not_found', message: `The model ${run.model} is no longer in the catalogue (GET /v1/models).` });
    if (!catalogue.configured(model.provider)) {
      throw new RunRefused({
        code: 'provider_not_configured',
        message: `No ${model.provider} provider is configured for ${model.id}: set ${catalogue.missingSetting(model.provider)}.`,
      });
    }
    return { candidates: [model.id], reason: `${model.id}: named by the ${run.model === agent.model ? 'agent' : 'run'}.` };
  }
  const inputChars =
    agent.instructions.length + JSON.stringify(run.input).length + attachments.reduce((sum, f) => sum + Math.min(f.bytes, 20_000), 0);
  const needs = {
    tools: agent.tools.length > 0 || attachments.length > 0,
    vision: attachments.some((f) => f.mime_type === 'image/png' || f.mime_type === 'image/jpeg'),
    input_tokens: Math.ceil(inputChars / 4),
  };
  const routed = routeAuto(catalogue, needs);
  if (routed.candidates.length === 0) throw new RunRefused({ code: 'no_model_available', message: routed.reason });
  return routed;
}
