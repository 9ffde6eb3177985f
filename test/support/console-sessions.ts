/**
 * The console's requests as a browser sends them (a session cookie, and on changes the Origin and CSRF headers
 * the console adds), each answer checked against the API's document.
 */
import assert from 'node:assert/strict';
import type { TestApi } from './api.js';
import { assertDocumentedResponse } from './contract.js';

export interface Answer {
  status: number;
  headers: Headers;
  body: any;
}

/** What a browser sends: the cookie, and on changes the Origin and CSRF headers the console adds. */
export interface BrowserRequest {
  cookie?: string;
  origin?: string | null;
  csrf?: string;
  json?: unknown;
  headers?: Record<string, string>;
}

export async function send(api: TestApi, method: string, path: string, request: BrowserRequest = {}): Promise<Answer> {
  const headers: Record<string, string> = { ...request.headers };
  if (request.cookie !== undefined) headers.cookie = request.cookie;
  if (request.origin !== undefined && request.origin !== null) headers.origin = request.origin;
  if (request.csrf !== undefined) headers['x-csrf-token'] = request.csrf;
  if (request.json !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(api.url + path, {
    method,
    headers,
    body: request.json === undefined ? undefined : JSON.stringify(request.json),
  });
  const contentType = response.headers.get('content-type') ?? '';
  const text = await response.text();
  const body = contentType.startsWith('application/json') ? JSON.parse(text) : text;
  assertDocumentedResponse(method, path, response.status, body, contentType);
  return { status: response.status, headers: response.headers, body };
}

/** The `name=value` part of the session cookie a response set. */
export function sessionCookieOf(response: Answer): string {
  const cookie = response.headers.getSetCookie().find((c) => c.startsWith('agentplane_session='));
  assert.ok(cookie, `no session cookie in ${JSON.stringify(response.headers.getSetCookie())}`);
  return cookie.split(';')[0]!;
}

/** Signs in to the console with `key` from the API's own origin: the session, its cookie and its CSRF token. */
export async function signIn(api: TestApi, key: string) {
  const response = await send(api, 'POST', '/v1/sessions', { origin: api.url, json: { api_key: key } });
  assert.equal(response.status, 201, JSON.stringify(response.body));
  return { response, cookie: sessionCookieOf(response), csrf: response.body.csrf_token as string, session: response.body };
}
