/**
 * The typed HTTP client of the Agentplane API: paths, parameters, bodies and responses all come from the
 * types generated from api/openapi.yaml, so a call the document does not allow does not compile. The test
 * suite uses it, and so does anything else (the Kubernetes controller) that talks to the platform: through
 * its public API, as any user does.
 */
import createClient, { type Client, type Middleware } from 'openapi-fetch';
import type { components, paths } from '../api/generated/openapi.js';

export type AgentplaneClient = Client<paths>;
export type ApiErrorBody = components['schemas']['Error'];
export type ScorerSpec = components['schemas']['ScorerSpec'];
export type { Middleware };

export interface ClientOptions {
  /** Where the API is served, e.g. `http://localhost:8080`. */
  baseUrl: string;
  /** An API key, `ap_…`. */
  apiKey?: string;
  /** Seen by every request and response, e.g. to log or to check responses. */
  middleware?: Middleware[];
}

export function createAgentplaneClient({ baseUrl, apiKey, middleware = [] }: ClientOptions): AgentplaneClient {
  const client = createClient<paths>({ baseUrl, headers: apiKey ? { authorization: `Bearer ${apiKey}` } : {} });
  for (const each of middleware) client.use(each);
  return client;
}
