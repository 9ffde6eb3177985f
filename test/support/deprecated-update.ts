/** What an update by POST, the deprecated verb, must say about itself on its answer. */
import assert from 'node:assert/strict';
import type { ApiResponse } from './client.js';

/**
 * Asserts that the answer to `POST <path>` says it is deprecated (RFC 9745) and that its `Link` leads to the
 * served document, which marks that operation deprecated.
 */
export async function assertMarkedDeprecated(baseUrl: string, path: string, answer: ApiResponse): Promise<void> {
  assert.match(answer.headers.get('deprecation') ?? '', /^@\d+$/, 'no Deprecation date');
  const link = /^<([^>]+)>; rel="deprecation"/.exec(answer.headers.get('link') ?? '');
  assert.ok(link, `no Link with rel="deprecation": ${answer.headers.get('link')}`);
  const document = await fetch(new URL(link[1]!, baseUrl + path));
  assert.equal(document.status, 200);
  const template = path.replace(/\/[^/]+$/, '/{id}');
  const { paths } = (await document.json()) as {
    paths: Record<string, { post?: { deprecated?: boolean }; patch?: { deprecated?: boolean } }>;
  };
  assert.equal(paths[template]?.post?.deprecated, true, `POST ${template} is not marked deprecated`);
  assert.equal(paths[template]?.patch?.deprecated, undefined, `PATCH ${template} is marked deprecated`);
}
