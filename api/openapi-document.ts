/** The OpenAPI document, read once: api/openapi.yaml (the source of truth for every shape), as the build wrote it. */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

// Beside this module: the build writes the document into dist/ as JSON (scripts/copy-assets.mjs).
const openapiPath = fileURLToPath(new URL('./openapi.json', import.meta.url));

export interface OpenApiParameter {
  name: string;
  in: 'query' | 'path' | 'header';
  required?: boolean;
  /** `deepObject`: an object sent as `name[key]=value` pairs. */
  style?: string;
  /** `false` on a query array: its items come comma-separated (`a,b`), repeated (`x=a&x=b`), or both. */
  explode?: boolean;
  schema: Record<string, unknown>;
}

export interface OpenApiOperation {
  operationId: string;
  parameters?: (OpenApiParameter | { $ref: string })[];
  requestBody?: unknown;
  responses: Record<string, unknown>;
}

export interface OpenApiDocument {
  paths: Record<string, Record<string, OpenApiOperation>>;
  components: { parameters: Record<string, OpenApiParameter>; schemas: Record<string, unknown> };
  [key: string]: unknown;
}

export const openapiDocument = JSON.parse(readFileSync(openapiPath, 'utf8')) as OpenApiDocument;

export function findOperation(operationId: string): { path: string; method: string; operation: OpenApiOperation } {
  for (const [path, methods] of Object.entries(openapiDocument.paths)) {
    for (const [method, operation] of Object.entries(methods)) {
      if (operation.operationId === operationId) return { path, method, operation };
    }
  }
  throw new Error(`no operation ${operationId} in api/openapi.yaml`);
}

export function parametersOf(operation: OpenApiOperation): OpenApiParameter[] {
  return (operation.parameters ?? []).map((p) => {
    if (!('$ref' in p)) return p;
    const name = p.$ref.replace('#/components/parameters/', '');
    const resolved = openapiDocument.components.parameters[name];
    if (!resolved) throw new Error(`unresolved parameter ${p.$ref}`);
    return resolved;
  });
}
