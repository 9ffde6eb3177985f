/** Checks every response the tests receive against api/openapi.yaml: status documented, body matches. */
import { Ajv2020 } from 'ajv/dist/2020.js';
import { openapiDocument } from '../../api/openapi-document.js';

const DOCUMENT_ID = 'agentplane-openapi-responses';
const ajv = new Ajv2020({ strict: false, allErrors: true });
ajv.addSchema({ ...openapiDocument, $id: DOCUMENT_ID });

const templates = Object.keys(openapiDocument.paths).map((template) => ({
  template,
  pattern: new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`),
}));

export function documentedPath(path: string): string | undefined {
  return templates.find(({ pattern }) => pattern.test(path))?.template;
}

/** Throws when the response is not what the document promises for this operation and status. */
export function assertDocumentedResponse(method: string, path: string, status: number, body: unknown, contentType: string): void {
  const template = documentedPath(path.split('?')[0]!);
  if (!template) {
    if (status === 404) return; // unknown routes answer the error body, checked by the tests themselves
    throw new Error(`${method} ${path} is not in api/openapi.yaml`);
  }
  const lower = method.toLowerCase();
  const operation = openapiDocument.paths[template]![lower];
  if (!operation) {
    if (status === 405) return;
    throw new Error(`${method} ${template} is not in api/openapi.yaml`);
  }
  if (!(String(status) in operation.responses)) {
    throw new Error(`${method} ${template} answered ${status}, which api/openapi.yaml does not document: ${JSON.stringify(body)}`);
  }
  if (!contentType.startsWith('application/json')) return;
  const pointer = `${DOCUMENT_ID}#/paths/${template.replaceAll('~', '~0').replaceAll('/', '~1')}/${lower}/responses/${status}`;
  const documented = operation.responses[String(status)];
  const response = resolve(documented) as { content?: Record<string, { schema: unknown }> };
  if (!response.content?.['application/json']) return;
  const check = compiled(schemaRef(documented, pointer));
  if (!check(body)) {
    throw new Error(
      `${method} ${template} ${status} does not match api/openapi.yaml: ${ajv.errorsText(check.errors)}\n${JSON.stringify(body)}`,
    );
  }
}

/** A Server-Sent Event as it came: `data` is the text of its data lines. */
export interface StreamedEvent {
  id: string | null;
  event: string;
  data: string;
}

/**
 * Throws when a Server-Sent Event is not what the document promises for this operation's stream: the
 * event against the `text/event-stream` schema, and the JSON in its data against that schema's
 * `contentSchema` (which Ajv leaves unchecked, as an annotation).
 */
export function assertDocumentedEvent(method: string, path: string, status: number, event: StreamedEvent): void {
  const template = documentedPath(path.split('?')[0]!);
  const lower = method.toLowerCase();
  const documented = template ? openapiDocument.paths[template]![lower]?.responses[String(status)] : undefined;
  const media = documented
    ? (resolve(documented) as { content?: Record<string, { schema?: unknown }> }).content?.['text/event-stream']
    : undefined;
  if (!media?.schema) throw new Error(`${method} ${path} ${status} sent an event, but api/openapi.yaml documents no event stream there`);
  const pointer = `${DOCUMENT_ID}#/paths/${template!.replaceAll('~', '~0').replaceAll('/', '~1')}/${lower}/responses/${status}`;
  const ref = (media.schema as { $ref?: string }).$ref;
  const eventRef = ref ? `${DOCUMENT_ID}${ref}` : schemaRef(documented, pointer, 'text/event-stream');
  const fields = { event: event.event, data: event.data, ...(event.id === null ? {} : { id: event.id }) };
  const checkEvent = compiled(eventRef);
  if (!checkEvent(fields))
    throw new Error(
      `${method} ${template} sent an event that does not match api/openapi.yaml: ${ajv.errorsText(checkEvent.errors)}\n${JSON.stringify(fields)}`,
    );
  const data = (resolve(media.schema) as { properties?: { data?: { contentMediaType?: string; contentSchema?: unknown } } }).properties
    ?.data;
  if (data?.contentMediaType !== 'application/json' || data.contentSchema === undefined) return;
  const checkData = compiled(`${eventRef}/properties/data/contentSchema`);
  const parsed: unknown = JSON.parse(event.data);
  if (!checkData(parsed))
    throw new Error(
      `${method} ${template} sent event data that does not match api/openapi.yaml: ${ajv.errorsText(checkData.errors)}\n${event.data}`,
    );
}

const cache = new Map<string, ReturnType<typeof ajv.compile>>();
function compiled(ref: string) {
  let check = cache.get(ref);
  if (!check) cache.set(ref, (check = ajv.compile({ $ref: ref })));
  return check;
}

function resolve(value: unknown): unknown {
  const ref = (value as { $ref?: string }).$ref;
  if (!ref) return value;
  return ref
    .replace('#/', '')
    .split('/')
    .reduce((node: Record<string, unknown>, key) => node[key] as Record<string, unknown>, openapiDocument as Record<string, unknown>);
}

function schemaRef(response: unknown, pointer: string, mediaType = 'application/json'): string {
  const ref = (response as { $ref?: string }).$ref;
  const base = ref ? `${DOCUMENT_ID}${ref}` : pointer;
  return `${base}/content/${mediaType.replace('/', '~1')}/schema`;
}
