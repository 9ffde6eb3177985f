import type { components } from '../api/generated/openapi.js';
import type { ProjectRecord } from '../records/projects.js';
import { unixSeconds } from './time.js';

export function presentProject(project: ProjectRecord): components['schemas']['Project'] {
  return { id: project.id, object: 'project', name: project.name, created_at: unixSeconds(project.created_at) };
}
