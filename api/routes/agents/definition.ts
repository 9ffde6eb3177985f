/** The checks an agent definition needs beyond its JSON shape: a model the catalogue knows, and sound tools. */
import type { ModelCatalogue } from '../../../models/catalogue.js';
import { toolDefinitionProblems, type ToolDefinition } from '../../../tools/definitions.js';
import type { AgentTool } from '../../../records/agents.js';
import { InvalidRequestError } from '../../errors.js';

/** `auto`, or a model of the catalogue (asking a local server again for its models before refusing). */
export async function checkModel(catalogue: ModelCatalogue, model: string, param = 'model'): Promise<void> {
  if (model === 'auto' || catalogue.find(model)) return;
  await catalogue.refresh().catch(() => {});
  if (catalogue.find(model)) return;
  const names = catalogue.list().map((m) => m.id);
  const shown = names.length > 40 ? `${names.slice(0, 40).join(', ')}, … (GET /v1/models lists all)` : names.join(', ');
  throw InvalidRequestError('model_not_found', `Unknown model '${model}'. Use auto or one of: ${shown}.`, param);
}

export function checkTools(tools: AgentTool[], allowPrivate: boolean): void {
  const problem = toolDefinitionProblems(tools as ToolDefinition[], { allowPrivate })[0];
  if (problem) throw InvalidRequestError('invalid_tool', problem.message, problem.param);
}
