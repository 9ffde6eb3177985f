import assert from 'node:assert/strict';
import type { ApiClient } from '../support/client.js';
import { createAgent, startRunsStack, type RunsStack } from '../support/runs.js';
import { newTenant } from '../support/api.js';
import { eventsFor } from '../../records/events.js';

type Source = {
  file_id: string;
  filename: string;
  page: number | null;
  start_ms: number | null;
  start: number;
  end: number;
  text: string;
  extractor: string;
};
type Node = { id: string; type: string; name: string; canonical_name: string; mentions: number; files: number; sources: Source[] };

const MEMO = [
  'Board memo.',
  '\f',
  'Maria Lopez, CEO of Acme Corporation, met the auditors in Berlin. Acme Corporation acquired Globex Ltd for $1.2 million.',
].join('');
const NOTE = 'Follow-up: Maria Lopez will visit Berlin again. Initech hired Peter Gibbons.';

async function uploadText(client: ApiClient, text: string, filename: string, purpose: 'context' | 'attachment' = 'context') {
  const upload = await client.upload({ purpose, file: { data: Buffer.from(text), filename, type: 'text/plain' } });
  assert.equal(upload.status, 200, JSON.stringify(upload.body));
  return client.settledFile(upload.body.id);
}

async function search(client: ApiClient, q: string, extra = ''): Promise<{ entities: Node[]; relations: any[]; passages: any[] }> {
  const found = await client.get(`/v1/graph/search?q=${encodeURIComponent(q)}${extra}`);
  assert.equal(found.status, 200, JSON.stringify(found.body));
  return found.body;
}

describe('the context graph: entities and relations with provenance, search, and exact deletion', function () {
  this.timeout(120_000);
  let stack: RunsStack;

  before(async () => {
    stack = await startRunsStack('context-graph');
  });

  after(async () => stack?.stop());

  it("builds nodes from a context file's entities, each mention anchored to its page and characters", async () => {
    const client = stack.tenant.admin;
    const memo = await uploadText(client, MEMO, 'memo.txt');
    assert.equal(memo.status, 'processed', JSON.stringify(memo.last_error));
    assert.ok(memo.extracted.graph_items > 0);

    const { entities, relations } = await search(client, 'Acme');
    const acme = entities.find((e) => e.type === 'organization' && /acme/i.test(e.name));
    assert.ok(acme, JSON.stringify(entities));
    assert.equal(acme.mentions, 2, 'both mentions, on page 2, merged into one node');
    const mention = acme.sources[0]!;
    assert.equal(mention.file_id, memo.id);
    assert.equal(mention.filename, 'memo.txt');
    assert.equal(mention.page, 2);
    const page2 = MEMO.split('\f')[1]!;
    assert.equal(page2.slice(mention.start, mention.end), mention.text);
    assert.match(mention.text, /Acme/);

    const kinds = relations.map((r) => `${r.source.name} ${r.type} ${r.target.name}`);
    assert.ok(
      kinds.some((k) => /Maria Lopez works_for Acme/.test(k)),
      kinds.join('; '),
    );
    assert.ok(
      kinds.some((k) => /Acme.* acquired Globex/.test(k)),
      kinds.join('; '),
    );

    const detail = await client.get(`/v1/graph/nodes/${acme.id}`);
    assert.equal(detail.status, 200);
    assert.equal(detail.body.mentions.length, 2);
    assert.ok(detail.body.mentions.every((m: Source) => m.page === 2 && page2.slice(m.start, m.end) === m.text));
    const acquired = detail.body.relations.find((r: { type: string }) => r.type === 'acquired');
    assert.equal(acquired.direction, 'outgoing');
    assert.match(acquired.other.name, /Globex/);
    assert.equal(acquired.source.page, 2);
    assert.match(acquired.source.text, /acquired Globex/);
    assert.equal(page2.slice(acquired.source.start, acquired.source.end), acquired.source.text);
  });

  it('anchors mentions deep in a long page to their offsets in the page, however the page is cut for analysis', async () => {
    const client = stack.tenant.admin;
    const text = `${'the weather was mild and nothing happened. '.repeat(3000)}Then Ingrid Halvorsen visited Trondheim.`;
    const file = await uploadText(client, text, 'long-page.txt');
    assert.equal(file.status, 'processed');
    const ingrid = (await search(client, 'Ingrid Halvorsen', '&type=person')).entities[0]!;
    const [mention] = ingrid.sources;
    assert.equal(mention!.page, 1);
    assert.equal(mention!.start, text.indexOf('Ingrid Halvorsen'));
    assert.equal(text.slice(mention!.start, mention!.end), 'Ingrid Halvorsen');
  });

  it('counts as extracted exactly what the graph holds for the file, and finds passages by their words', async () => {
    const client = stack.tenant.admin;
    const note = await uploadText(client, NOTE, 'note.txt');
    const items = await stack.api.services.db.query('SELECT count(*)::int AS n FROM graph_items WHERE file_id = $1', [note.id]);
    assert.equal(note.extracted.graph_items, items.rows[0]!.n);
    const { passages } = await search(client, 'Gibbons');
    assert.ok(
      passages.some((p) => p.file_id === note.id && p.page === 1 && /«Gibbons»/.test(p.snippet)),
      JSON.stringify(passages),
    );
    assert.deepEqual((await search(client, 'Initech', '&type=person')).entities, [], 'the type filter applies');
  });

  it('finds a passage by its meaning when it shares no word with the query (all-MiniLM-L6-v2 embeddings)', async () => {
    const client = stack.tenant.admin;
    const file = await uploadText(client, 'The physician prescribed medication for the patient who was ill.', 'clinic.txt');
    const stored = await stack.api.services.db.query<{ dimensions: number }>(
      'SELECT array_length(embedding, 1) AS dimensions FROM file_page_embeddings WHERE file_id = $1',
      [file.id],
    );
    assert.deepEqual(stored.rows, [{ dimensions: 384 }]);
    const { passages } = await search(client, 'doctor gave drugs to a sick person');
    const found = passages.find((p) => p.file_id === file.id);
    assert.ok(found, JSON.stringify(passages));
    assert.equal(found.page, 1);
    assert.equal(found.snippet, 'The physician prescribed medication for the patient who was ill.', 'found by meaning: no word to mark');
    assert.ok(!passages.some((p) => p.filename === 'memo.txt'), 'an unrelated passage is not dragged in');
  });

  it('adds nothing to the graph for an attachment, which is still extracted for runs', async () => {
    const client = stack.tenant.admin;
    const file = await uploadText(client, 'Zebulon Quartz founded Quartzwerk GmbH in Vienna.', 'attachment.txt', 'attachment');
    assert.equal(file.status, 'processed');
    assert.deepEqual(file.extracted, { pages: 1, tables: 0, graph_items: 0 });
    assert.deepEqual((await search(client, 'Zebulon')).entities, []);
    assert.deepEqual((await search(client, 'Zebulon')).passages, [], 'attachments are not searched either');
  });

  it('deletes exactly one file’s items, keeping the nodes another file supports and removing the rest', async () => {
    const tenant = await newTenant(stack.api, 'context-graph-deletion');
    const kept = await uploadText(tenant.admin, 'Nadia Petrova visited Lisbon. Nadia Petrova works at Orbital Systems.', 'kept.txt');
    const doomed = await uploadText(tenant.admin, 'Nadia Petrova met Tomas Berg in Lisbon.', 'doomed.txt');
    const db = stack.api.services.db;
    const nodes = async () =>
      (
        await db.query<{ canonical_name: string }>('SELECT canonical_name FROM graph_nodes WHERE project_id = $1 ORDER BY 1', [
          tenant.projectId,
        ])
      ).rows.map((r) => r.canonical_name);
    const before = await nodes();
    assert.ok(
      before.some((n) => /tomas berg/.test(n)),
      before.join(', '),
    );

    const shown = (await tenant.admin.get(`/v1/files/${doomed.id}`)).body.extracted.graph_items;
    const deleted = await tenant.admin.delete(`/v1/files/${doomed.id}`);
    assert.deepEqual(deleted.body, { id: doomed.id, object: 'file', deleted: true, graph_items_removed: shown });

    const after = await nodes();
    assert.ok(!after.some((n) => /tomas berg/.test(n)), 'a node only the deleted file supported is gone');
    assert.ok(after.some((n) => /nadia petrova/.test(n)) && after.some((n) => /lisbon/.test(n)), 'shared nodes stay');
    const keptItems = await db.query('SELECT count(*)::int AS n FROM graph_items WHERE file_id = $1', [kept.id]);
    assert.equal(keptItems.rows[0]!.n, kept.extracted.graph_items, "the other file's items are all there");
    const orphans = await db.query(
      `SELECT count(*)::int AS n FROM graph_nodes n WHERE project_id = $1 AND NOT EXISTS (
         SELECT 1 FROM graph_items i WHERE i.node_id = n.id OR i.source_node = n.id OR i.target_node = n.id)`,
      [tenant.projectId],
    );
    assert.equal(orphans.rows[0]!.n, 0);
    const nadia = (await search(tenant.admin, 'Nadia Petrova')).entities[0]!;
    assert.ok(nadia.sources.every((s) => s.file_id === kept.id));
  });

  it('stays exact when files sharing nodes are extracted and deleted at the same time', async () => {
    const tenant = await newTenant(stack.api, 'context-graph-race');
    const db = stack.api.services.db;
    const text = (i: number) =>
      `Report ${i}: Helena Marsh of Quantum Dynamics met Oliver Stone in Geneva. Quantum Dynamics acquired Vertex Labs.`;
    const first = await Promise.all(
      [0, 1, 2, 3].map((i) =>
        tenant.admin.upload({ purpose: 'context', file: { data: Buffer.from(text(i)), filename: `r${i}.txt`, type: 'text/plain' } }),
      ),
    );
    // Delete two while the others (and two new ones) are still being extracted.
    const more = Promise.all(
      [4, 5].map((i) =>
        tenant.admin.upload({ purpose: 'context', file: { data: Buffer.from(text(i)), filename: `r${i}.txt`, type: 'text/plain' } }),
      ),
    );
    const deletions = await Promise.all([first[0]!, first[1]!].map((u) => tenant.admin.delete(`/v1/files/${u.body.id}`)));
    assert.deepEqual(
      deletions.map((d) => d.status),
      [200, 200],
    );
    const survivors = [first[2]!, first[3]!, ...(await more)].map((u) => u.body.id);
    for (const id of survivors) assert.equal((await tenant.admin.settledFile(id)).status, 'processed');

    const { rows } = await db.query<{ id: string; shown: number; stored: number }>(
      `SELECT f.id, f.graph_items AS shown, (SELECT count(*)::int FROM graph_items i WHERE i.file_id = f.id) AS stored FROM files f WHERE f.project_id = $1`,
      [tenant.projectId],
    );
    assert.deepEqual(rows.map((r) => r.id).sort(), [...survivors].sort());
    for (const r of rows) assert.equal(r.stored, r.shown);
    const orphans = await db.query(
      `SELECT count(*)::int AS n FROM graph_nodes n WHERE project_id = $1 AND NOT EXISTS (
         SELECT 1 FROM graph_items i WHERE i.node_id = n.id OR i.source_node = n.id OR i.target_node = n.id)`,
      [tenant.projectId],
    );
    assert.equal(orphans.rows[0]!.n, 0);
    const oliver = (await search(tenant.admin, 'Oliver Stone')).entities.find((e) => e.type === 'person')!;
    assert.equal(oliver.files, survivors.length, 'one node, supported by every surviving file');
  });

  it("serves a file's text part by part and its tables, and refuses them until it is processed", async () => {
    const client = stack.tenant.admin;
    const file = await uploadText(client, 'one\ftwo\fthree', 'three-pages.txt', 'attachment');
    const first = await client.get(`/v1/files/${file.id}/content?limit=2`);
    assert.equal(first.status, 200);
    assert.deepEqual(
      first.body.data.map((p: { id: string; page: number; text: string; source: string }) => [p.id, p.page, p.text, p.source]),
      [
        ['page-1', 1, 'one', 'plain_text'],
        ['page-2', 2, 'two', 'plain_text'],
      ],
    );
    assert.equal(first.body.has_more, true);
    const rest = await client.get(`/v1/files/${file.id}/content?after=${first.body.last_id}`);
    assert.deepEqual(
      rest.body.data.map((p: { text: string }) => p.text),
      ['three'],
    );
    assert.equal(rest.body.has_more, false);
    assert.equal((await client.get(`/v1/files/${file.id}/content?after=segment-1`)).body.error.code, 'invalid_cursor');
    assert.deepEqual((await client.get(`/v1/files/${file.id}/tables`)).body.data, []);

    const other = await newTenant(stack.api, 'context-graph-other');
    assert.equal((await other.admin.get(`/v1/files/${file.id}/content`)).status, 404);
  });

  it('records file.failed when extraction fails, like file.processed', async () => {
    const client = stack.tenant.admin;
    const upload = await client.upload({
      purpose: 'context',
      file: { data: Buffer.from('%PDF-1.7\nnot really a document'), filename: 'broken.pdf', type: 'application/pdf' },
    });
    assert.equal(upload.status, 200, JSON.stringify(upload.body));
    const file = await client.settledFile(upload.body.id);
    assert.equal(file.status, 'failed');
    assert.equal(file.last_error.code, 'invalid_file');
    assert.equal((await eventsFor(stack.api.services.db, stack.tenant.projectId, 'file.failed', file.id)).length, 1);
    const content = await client.get(`/v1/files/${file.id}/content`);
    assert.equal(content.status, 409);
    assert.equal(content.body.error.code, 'file_not_processed');
  });

  it('gives agents search_context, whose citations the run keeps with its output', async () => {
    const client = stack.tenant.admin;
    const agent = await createAgent(client);
    stack.openai.enqueue({
      tool_calls: [{ name: 'search_context', arguments: JSON.stringify({ query: 'Globex' }) }],
      usage: { input: 10, output: 5 },
    });
    stack.openai.enqueue({ text: ['Acme bought Globex [1].'], usage: { input: 20, output: 5 } });
    const run = await client.post(`/v1/agents/${agent.id}/run`, { input: 'Who bought Globex?' });
    assert.equal(run.body.status, 'completed', JSON.stringify(run.body.error));
    const offered =
      (stack.openai.requests[stack.openai.requests.length - 2] as unknown as { tools?: { function: { name: string } }[] }).tools ?? [];
    assert.ok(offered.some((t) => t.function.name === 'search_context'));
    assert.match(run.body.steps[1].output, /\[1\] "memo\.txt" \(file_\w+\), page 2: .*«Globex»/);
    assert.equal(run.body.output.citations.length, run.body.steps[1].citations.length);
    assert.deepEqual(
      run.body.output.citations.map((c: { filename: string; page: number }) => [c.filename, c.page]),
      [['memo.txt', 2]],
    );
  });
});

describe('relations read by a model (AGENTPLANE_GRAPH_MODEL)', function () {
  this.timeout(120_000);
  let stack: RunsStack;

  before(async () => {
    stack = await startRunsStack('context-graph-model', { AGENTPLANE_GRAPH_MODEL: 'gpt-4.1-nano' });
  });

  after(async () => stack?.stop());

  const TEXT = 'Maria Lopez advises Globex Ltd on pricing. Maria Lopez lives in Madrid.';

  it('adds the relations the model states between known entities, anchored to their sentence, and records what the call cost', async () => {
    stack.openai.enqueue({
      model: 'gpt-4.1-nano',
      tool_calls: [
        {
          name: 'record_relations',
          arguments: JSON.stringify({
            relations: [
              { source: 'Maria Lopez', relation: 'advises', target: 'Globex Ltd', evidence: 'Maria Lopez advises Globex Ltd on pricing.' },
              { source: 'Maria Lopez', relation: 'owns', target: 'Globex Ltd', evidence: 'Maria Lopez owns Globex Ltd.' },
              { source: 'Someone Else', relation: 'advises', target: 'Globex Ltd', evidence: 'Maria Lopez advises Globex Ltd on pricing.' },
            ],
          }),
        },
      ],
      usage: { input: 1000, output: 100 },
    });
    const file = await uploadText(stack.tenant.admin, TEXT, 'advisers.txt');
    assert.equal(file.status, 'processed', JSON.stringify(file.last_error));

    const sent = JSON.stringify(stack.openai.requests.at(-1));
    assert.match(sent, /record_relations/);
    assert.match(sent, /- Maria Lopez\\n- Globex Ltd/);

    const maria = (await search(stack.tenant.admin, 'Maria Lopez', '&type=person')).entities[0]!;
    const detail = (await stack.tenant.admin.get(`/v1/graph/nodes/${maria.id}`)).body;
    const read = detail.relations.filter((r: { source: Source }) => r.source.extractor === 'model:gpt-4.1-nano');
    assert.deepEqual(
      read.map((r: { type: string; other: { name: string } }) => [r.type, r.other.name]),
      [['advises', 'Globex Ltd']],
      'only a stated relation between listed entities, with its evidence in the text',
    );
    assert.equal(read[0].source.text, 'Maria Lopez advises Globex Ltd on pricing.');
    assert.equal(TEXT.slice(read[0].source.start, read[0].source.end), read[0].source.text);
    assert.ok(
      detail.relations.some((r: { source: Source }) => r.source.extractor === 'cooccurrence'),
      'offline relations stay',
    );

    const usage = await stack.api.services.db.query(
      "SELECT model, price_version, input_tokens::int, output_tokens::int, cost::text FROM usage_records WHERE source = 'extraction' AND file_id = $1",
      [file.id],
    );
    // gpt-4.1-nano: $0.10 in and $0.40 out per million.
    assert.deepEqual(
      usage.rows.map((r) => [r.model, r.input_tokens, r.output_tokens, r.cost]),
      [['gpt-4.1-nano', 1000, 100, '0.00014']],
    );
    assert.ok(usage.rows[0]!.price_version);
  });

  it('leaves a file processed with its offline relations when the model keeps failing', async () => {
    stack.openai.setFallback({ model: 'gpt-4.1-nano', status: 503 });
    const asked = () => stack.openai.requests.filter((r) => r.model === 'gpt-4.1-nano').length;
    const before = asked();
    try {
      const file = await uploadText(
        stack.tenant.admin,
        'Pablo Ruiz advises Initrode Ltd on pricing. Pablo Ruiz lives in Seville.',
        'down.txt',
      );
      assert.equal(file.status, 'processed', JSON.stringify(file.last_error));
      assert.ok(file.extracted.graph_items > 0);
      const extractors = await stack.api.services.db.query<{ extractor: string }>(
        `SELECT DISTINCT provenance->>'extractor' AS extractor FROM graph_items WHERE file_id = $1 AND kind = 'relation'`,
        [file.id],
      );
      assert.ok(
        extractors.rows.every((r) => !r.extractor.startsWith('model:')),
        JSON.stringify(extractors.rows),
      );
      assert.ok(asked() - before >= 3, `the model was asked on each of the stage's three attempts (${asked() - before} requests)`);
    } finally {
      stack.openai.setFallback(null);
    }
  });

  /** The passage a graph-model request showed the model. */
  const passageOf = (request: Record<string, unknown>) =>
    /Passage:\n([^]*)$/.exec(String((request.messages as { content: string }[])[1]?.content))?.[1];
  const noRelations = {
    model: 'gpt-4.1-nano',
    tool_calls: [{ name: 'record_relations', arguments: '{"relations":[]}' }],
    usage: { input: 100, output: 10 },
  };

  it('asks the model once per passage when the stage runs again after a failed call, and charges each passage once', async () => {
    const pages = [
      'Peter Gibbons advises Initech Ltd on pricing.',
      'Samir Nagheenanajar advises Initrode Ltd on pricing.',
      'Michael Bolton advises Penetrode Ltd on pricing.',
      'Bill Lumbergh advises Chotchkies Ltd on pricing.',
    ];
    const first = stack.openai.requests.length;
    stack.openai.enqueue({
      model: 'gpt-4.1-nano',
      tool_calls: [
        {
          name: 'record_relations',
          arguments: JSON.stringify({
            relations: [{ source: 'Peter Gibbons', relation: 'advises', target: 'Initech Ltd', evidence: pages[0] }],
          }),
        },
      ],
      usage: { input: 100, output: 10 },
    });
    stack.openai.enqueue(noRelations);
    stack.openai.enqueue({ model: 'gpt-4.1-nano', status: 503 });
    stack.openai.setFallback(noRelations);
    try {
      const file = await uploadText(stack.tenant.admin, pages.join('\f'), 'retried.txt');
      assert.equal(file.status, 'processed', JSON.stringify(file.last_error));

      const asked = stack.openai.requests
        .slice(first)
        .filter((r) => r.model === 'gpt-4.1-nano')
        .map(passageOf);
      assert.deepEqual(
        pages.map((page) => asked.filter((p) => p === page).length),
        [1, 1, 2, 1],
        'the refused passage is asked again, the answered ones are not',
      );
      const usage = await stack.api.services.db.query<{ passage_hash: string }>(
        "SELECT passage_hash FROM usage_records WHERE source = 'extraction' AND file_id = $1",
        [file.id],
      );
      assert.equal(usage.rows.length, 4, 'one usage row per passage');
      assert.equal(new Set(usage.rows.map((r) => r.passage_hash)).size, 4);

      const read = await stack.api.services.db.query<{ text: string }>(
        "SELECT provenance->>'text' AS text FROM graph_items WHERE file_id = $1 AND provenance->>'extractor' = 'model:gpt-4.1-nano'",
        [file.id],
      );
      assert.deepEqual(
        read.rows.map((r) => r.text),
        [pages[0]],
        'the answer given before the failure is kept',
      );
    } finally {
      stack.openai.setFallback(null);
    }
  });

  it("stops asking the model once the project's budget is exhausted, and builds the file's graph from the offline relations", async () => {
    const tenant = await newTenant(stack.api, 'context-graph-budget');
    // gpt-4.1-nano: 1,000 tokens in and 100 out cost $0.00014, past this limit.
    const budget = await tenant.admin.post('/v1/budgets', { scope: { type: 'project' }, period: 'month', limit_usd: '0.0001' });
    assert.equal(budget.status, 201, JSON.stringify(budget.body));
    stack.openai.setFallback({ ...noRelations, usage: { input: 1000, output: 100 } });
    try {
      const spender = await uploadText(tenant.admin, 'Milton Waddams advises Initech Ltd on staplers.', 'spender.txt');
      assert.equal(spender.status, 'processed', JSON.stringify(spender.last_error));
      assert.equal((await tenant.admin.get(`/v1/budgets/${budget.body.id}`)).body.spent_usd, '0.00014');

      const before = stack.openai.requests.length;
      const file = await uploadText(tenant.admin, 'Joanna Smith advises Chotchkies Ltd on flair.', 'over-budget.txt');
      assert.equal(file.status, 'processed', JSON.stringify(file.last_error));
      assert.equal(stack.openai.requests.length - before, 0, 'the model was not asked');
      const relations = await stack.api.services.db.query<{ extractor: string }>(
        "SELECT provenance->>'extractor' AS extractor FROM graph_items WHERE file_id = $1 AND kind = 'relation'",
        [file.id],
      );
      assert.ok(
        relations.rows.length > 0 && relations.rows.every((r) => !r.extractor.startsWith('model:')),
        JSON.stringify(relations.rows),
      );
      const usage = await stack.api.services.db.query('SELECT 1 FROM usage_records WHERE file_id = $1', [file.id]);
      assert.equal(usage.rows.length, 0);
    } finally {
      stack.openai.setFallback(null);
    }
  });
});
