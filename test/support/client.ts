/**
 * HTTP clients for the tests, both checking every response against the OpenAPI document: `typed`, the
 * platform's own typed client, for well-formed calls; the raw methods for everything the types would not
 * let through (malformed bodies, unknown parameters, odd headers).
 */
import assert from 'node:assert/strict';
import { createAgentplaneClient, type AgentplaneClient, type Middleware } from '../../client/agentplane.js';
import { assertDocumentedResponse } from './contract.js';
import { eventually } from './eventually.js';

const checkedAgainstDocument: Middleware = {
  async onResponse({ request, response }) {
    const contentType = response.headers.get('content-type') ?? '';
    const text = await response.clone().text();
    const body = contentType.startsWith('application/json') ? JSON.parse(text) : text;
    assertDocumentedResponse(request.method, new URL(request.url).pathname, response.status, body, contentType);
  },
};

export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

export interface UploadParts {
  file?: { data: Buffer | Blob; filename?: string; type?: string };
  purpose?: string;
  metadata?: Record<string, unknown> | string;
  /** Extra raw fields, e.g. `metadata[key]`. */
  fields?: [string, string][];
}

export class ApiClient {
  /** The platform's typed client with this key. */
  readonly typed: AgentplaneClient;

  constructor(
    readonly baseUrl: string,
    readonly key?: string,
  ) {
    this.typed = createAgentplaneClient({ baseUrl, apiKey: key, middleware: [checkedAgainstDocument] });
  }

  withKey(key: string | undefined): ApiClient {
    return new ApiClient(this.baseUrl, key);
  }

  async request<T = any>(
    method: string,
    path: string,
    init: { json?: unknown; body?: RequestInit['body']; headers?: Record<string, string> } = {},
  ): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = { ...init.headers };
    if (this.key) headers.authorization = `Bearer ${this.key}`;
    let body = init.body;
    if (init.json !== undefined) {
      headers['content-type'] ??= 'application/json';
      body = JSON.stringify(init.json);
    }
    const response = await fetch(this.baseUrl + path, { method, headers, body });
    const contentType = response.headers.get('content-type') ?? '';
    const text = await response.text();
    const parsed = contentType.startsWith('application/json') ? JSON.parse(text) : text;
    assertDocumentedResponse(method, path, response.status, parsed, contentType);
    return { status: response.status, headers: response.headers, body: parsed as T };
  }

  get<T = any>(path: string, headers?: Record<string, string>) {
    return this.request<T>('GET', path, { headers });
  }

  post<T = any>(path: string, json: unknown, headers?: Record<string, string>) {
    return this.request<T>('POST', path, { json, headers });
  }

  patch<T = any>(path: string, json: unknown, headers?: Record<string, string>) {
    return this.request<T>('PATCH', path, { json, headers });
  }

  delete<T = any>(path: string) {
    return this.request<T>('DELETE', path);
  }

  /** Polls a file until its extraction has ended (`processed` or `failed`) and returns it. */
  settledFile<T = any>(id: string, timeoutMs = 30_000): Promise<T> {
    return eventually(
      async () => {
        const file = await this.get(`/v1/files/${id}`);
        assert.equal(file.status, 200, JSON.stringify(file.body));
        assert.notEqual(file.body.status, 'processing', 'still processing');
        return file.body as T;
      },
      { timeoutMs, intervalMs: 100, message: `file ${id} did not leave processing` },
    );
  }

  upload<T = any>(parts: UploadParts, headers?: Record<string, string>) {
    const form = new FormData();
    if (parts.purpose !== undefined) form.append('purpose', parts.purpose);
    if (parts.metadata !== undefined)
      form.append('metadata', typeof parts.metadata === 'string' ? parts.metadata : JSON.stringify(parts.metadata));
    for (const [name, value] of parts.fields ?? []) form.append(name, value);
    if (parts.file) {
      const blob =
        parts.file.data instanceof Blob
          ? parts.file.data
          : new Blob([parts.file.data], { type: parts.file.type ?? 'application/octet-stream' });
      form.append('file', blob, parts.file.filename ?? 'upload.bin');
    }
    return this.request<T>('POST', '/v1/files', { body: form, headers });
  }
}
