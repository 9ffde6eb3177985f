/** The checks a network definition needs beyond its shape: live member agents of the project, and a router that can decide. */
import type { Queryable } from '../../../records/db.js';
import { missingAgents, type NetworkRouter } from '../../../records/networks.js';
import type { ModelCatalogue } from '../../../models/catalogue.js';
import { InvalidRequestError } from '../../errors.js';
import { checkModel } from '../agents/definition.js';

export async function checkMembers(db: Queryable, projectId: string, members: string[]): Promise<void> {
  const missing = await missingAgents(db, projectId, members);
  if (missing.length > 0) {
    const index = members.indexOf(missing[0]!);
    throw InvalidRequestError(
      'unknown_member',
      `No agent '${missing[0]}' in this project: members must be agent ids of this project.`,
      `members.${index}`,
    );
  }
}

/** What the document's NetworkRouter branches cannot check: a supervisor agent that exists, a model the catalogue knows. */
export async function checkRouter(db: Queryable, projectId: string, catalogue: ModelCatalogue, router: NetworkRouter): Promise<void> {
  if (router.agent_id !== undefined && (await missingAgents(db, projectId, [router.agent_id])).length > 0) {
    throw InvalidRequestError('unknown_member', `No agent '${router.agent_id}' in this project.`, 'router.agent_id');
  }
  if (router.model !== undefined) await checkModel(catalogue, router.model, 'router.model');
}
