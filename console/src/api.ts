/**
 * The console's one way to the API: the project's typed client (client/agentplane.ts), reaching the API
 * beside the console under whatever path prefix serves both, signed in by the session cookie. State-changing
 * requests carry the session's CSRF token; a 401 means the session ended, and the console shows sign-in.
 */
import { createAgentplaneClient, type ApiErrorBody, type Middleware } from '../../client/agentplane';
import type { components } from '../../api/generated/openapi';
import { session } from './session';

export type Schemas = components['schemas'];

/** Where the API is, as the browser reaches it: the folder above the console's. */
export const apiRoot = new URL('../', document.baseURI);
export const apiBase = apiRoot.href.replace(/\/$/, '');

const SAFE = new Set(['GET', 'HEAD', 'OPTIONS']);

const sessionMiddleware: Middleware = {
  onRequest({ request }) {
    const token = session.current()?.csrf_token;
    if (!SAFE.has(request.method) && token) request.headers.set('x-csrf-token', token);
    return request;
  },
  onResponse({ response, request }) {
    if (response.status === 401 && !request.url.endsWith('/v1/sessions')) session.ended();
    return response;
  },
};

export const api = createAgentplaneClient({ baseUrl: apiBase, middleware: [sessionMiddleware] });

/** An API error as the console shows it. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** The data of an openapi-fetch result, or an ApiError thrown with the API's own message. */
export function unwrap<T>(result: { data?: T; error?: unknown; response: Response }): T {
  if (result.error !== undefined || result.data === undefined) {
    if (result.response.ok && result.error === undefined) return undefined as T;
    const body = result.error as ApiErrorBody | undefined;
    throw new ApiError(result.response.status, body?.error?.code ?? 'error', body?.error?.message ?? `HTTP ${result.response.status}`);
  }
  return result.data;
}

/** The URL of an API path as a browser reaches it (for EventSource, downloads and curl examples). */
export const apiUrl = (path: string) => new URL(path.replace(/^\//, ''), apiRoot).href;
