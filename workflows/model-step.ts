/**
 * A model call recorded as a run's step, the one way an agent's turn and a network supervisor's choice are
 * made. A step already completed is answered as recorded, never asked again; a PostgreSQL outage is waited
 * out before the call and after it (a reply in hand, paid for, is recorded once the database is back); a
 * model failure is recorded on the step when it is final, and becomes the activity's failure either way. A call
 * whose attempt alone is given up goes on and is recorded for the next attempt (calls-in-flight.ts).
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import { transaction, type Db, type Queryable } from '../records/db.js';
import { beginStep, completeModelStep, failStep, stepsOf, type RunStepRecord } from '../records/run-steps.js';
import type { CatalogueModel, ModelCatalogue } from '../models/catalogue.js';
import { COST_LIMIT_REACHED, MODEL_NOT_FOUND } from '../models/failure-kinds.js';
import { ModelCallError, type AssistantMessage, type ModelCallRequest, type ModelGateway } from '../models/gateway.js';
import { inputTokenBound, outputAllowance } from '../models/model-call.js';
import { capsOfCall, reserveModelCall, reservesNothing } from '../records/cost-caps.js';
import { outlastDatabaseOutage } from './database-outage.js';
import { keepBeating } from './heartbeats.js';
import { callOutlivingAttempt, endedCall, joinCallInFlight } from './calls-in-flight.js';
import { modelCallFailure } from './model-failure.js';
import type { StoredTraceContext } from '../tracing/context.js';
import { inChatSpan } from '../tracing/gen-ai.js';

export interface ModelStepDependencies {
  db: Db;
  models: { catalogue: ModelCatalogue; gateway: ModelGateway };
}

/** What a step sends its model; the model and the activity's cancellation are the step's own. */
export type ModelStepCall = Omit<ModelCallRequest, 'model' | 'signal'>;

export interface ModelStep<Read, Answer> {
  runId: string;
  stepIndex: number;
  /** The model's id in the catalogue. */
  model: string;
  /** What the step reads first on every attempt (the run, what it runs); `steps`: the run's steps so far. */
  read(steps: RunStepRecord[]): Promise<Read>;
  /** The call to make, for a step no attempt has recorded yet. */
  call(read: Read, model: CatalogueModel, steps: RunStepRecord[]): Promise<ModelStepCall>;
  /** Writes to be done before the reply is recorded (streamed text not yet stored), and after a failure. */
  flush?(): Promise<void>;
  /** Writes that go with the reply, in the transaction that records it. */
  recordWith?(tx: Queryable, read: Read, reply: AssistantMessage): Promise<void>;
  /** What the activity answers with the reply; `recorded`: an earlier attempt had recorded it. */
  answer(read: Read, reply: AssistantMessage, recorded: boolean): Promise<Answer>;
  /** The trace context of the run the step is of: the call's `chat` span is a child of the run's span. */
  traceOf?(read: Read): StoredTraceContext | null;
}

/** The model, looked up again when the catalogue misses it: a local server's model found since this worker listed them. */
async function catalogued(catalogue: ModelCatalogue, id: string): Promise<CatalogueModel> {
  if (!catalogue.find(id)) await catalogue.refresh().catch(() => {});
  const model = catalogue.find(id);
  if (!model) throw ApplicationFailure.nonRetryable(`The model ${id} is not in the catalogue.`, MODEL_NOT_FOUND);
  return model;
}

// A call is charged at the price in effect when its reply is recorded: it reserves at the dearest price in effect
// over the longest a call may last.
const LONGEST_CALL_MS = 10 * 60_000;

export async function runModelStep<Read, Answer>({ db, models }: ModelStepDependencies, step: ModelStep<Read, Answer>): Promise<Answer> {
  const { runId, stepIndex } = step;
  const context = Context.current();
  const key = `model:${runId}:${stepIndex}`;
  const beat = keepBeating();
  let callSignal: AbortSignal | undefined;
  try {
    // An earlier attempt's call still in flight on this worker is waited for, and its reply read as recorded.
    await joinCallInFlight(context, runId, key);
    const ready = await outlastDatabaseOutage(context, async () => {
      const steps = await stepsOf(db, runId);
      const read = await step.read(steps);
      const done = steps.find((s) => s.index === stepIndex);
      if (done?.status === 'completed' && done.message?.role === 'assistant') return { recorded: true as const, read, reply: done.message };
      const model = await catalogued(models.catalogue, step.model);
      const call = await step.call(read, model, steps);
      const outputTokens = outputAllowance(model, call.settings);
      // Last, so that only a start that failed itself is made again (and counted as another attempt). The call's
      // worst case is reserved against the run's caps and budgets first, in the same transaction; a run with none
      // (most) begins its step in one statement.
      const bound = {
        runId,
        stepIndex,
        model: model.id,
        inputTokens: inputTokenBound(call.messages, call.tools),
        outputTokens,
        price: models.catalogue.dearestPriceWithin(model, new Date(), LONGEST_CALL_MS),
      };
      const begin = (q: Queryable) => beginStep(q, runId, stepIndex, { type: 'model_call', model: model.id, provider: model.provider });
      const caps = await capsOfCall(db, bound);
      // A network's hop begins its step in two statements (its network run's log too): in a transaction either way.
      const reserved =
        reservesNothing(caps) && caps?.root_id === runId
          ? await begin(db).then(() => false)
          : await transaction(db, async (tx) => {
              const reservation = await reserveModelCall(tx, bound, caps);
              if ('refused' in reservation) throw ApplicationFailure.nonRetryable(reservation.refused, COST_LIMIT_REACHED);
              await begin(tx);
              return reservation.reserved;
            });
      // A reserved call is held to the output it reserved, whatever the provider would allow.
      if (reserved) call.settings = { ...call.settings, max_output_tokens: outputTokens };
      return { recorded: false as const, read, model, call };
    });
    if (ready.recorded) return await outlastDatabaseOutage(context, () => step.answer(ready.read, ready.reply, true));

    const { read, model, call } = ready;
    const reply = await callOutlivingAttempt(context, runId, key, async (signal) => {
      callSignal = signal;
      const price = models.catalogue.priceAt(model, new Date());
      const chat = { provider: model.provider, model: model.provider_model, messages: call.messages };
      const result = await inChatSpan(step.traceOf?.(read) ?? null, chat, async (done) => {
        const result = await models.gateway.call({ ...call, model, signal });
        const { usage } = result;
        done({
          finishReason: result.finish_reason,
          content: result.message,
          usage: result.usage,
          costUsd:
            ((usage.input_tokens - usage.cached_tokens) * Number(price.input_per_million) +
              usage.cached_tokens * Number(price.cached_input_per_million) +
              usage.output_tokens * Number(price.output_per_million)) /
            1_000_000,
        });
        return result;
      });
      await outlastDatabaseOutage(
        context,
        async () => {
          await step.flush?.();
          await transaction(db, async (tx) => {
            await completeModelStep(tx, runId, stepIndex, result.message, result.usage, price);
            await step.recordWith?.(tx, read, result.message);
          });
        },
        signal,
      );
      return result.message;
    });
    return await outlastDatabaseOutage(context, () => step.answer(read, reply, false), callSignal);
  } catch (err) {
    await step.flush?.().catch(() => {});
    const ended = endedCall(context, callSignal);
    if (ended) throw ended;
    if (!(err instanceof ModelCallError)) throw err;
    if (!err.retryable) {
      await outlastDatabaseOutage(context, () =>
        transaction(db, (tx) => failStep(tx, runId, stepIndex, 'failed', { code: `model_${err.kind}`, message: err.message })),
      );
    }
    throw modelCallFailure(err);
  } finally {
    beat.stop();
  }
}
