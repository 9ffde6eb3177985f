import assert from 'node:assert/strict';
import {
  canonicalName,
  extractEntities,
  type EntityExtraction,
  type EntityMention,
  type Passage,
} from '../../workflows/extraction/engines/entities.js';
import { extractEntitiesInThread } from '../../workflows/extraction/engines/analysis-thread.js';
import { longestStall } from '../support/stalls.js';

const page = (text: string, number: number | null = 1): Passage => ({ text, page: number, start_ms: null, end_ms: null });

const NEWS =
  'Maria Lopez, CEO of Acme Corporation, announced on March 3, 2025 that Acme Corp. acquired Globex Ltd for $1.2 million. ' +
  'Acme is based in Berlin.';

function names(result: EntityExtraction, type: EntityMention['type']): string[] {
  return result.mentions.filter((m) => m.type === type).map((m) => m.name);
}

function relation(result: EntityExtraction, type: string, source: string, target: string) {
  return result.relations.find(
    (r) => r.type === type && result.mentions[r.source]!.canonical === source && result.mentions[r.target]!.canonical === target,
  );
}

describe('entity extraction', () => {
  const passages = [page(NEWS)];
  const result = extractEntities(passages);

  it('finds the people, organisations, places, dates and money of a news paragraph', () => {
    assert.deepEqual(names(result, 'person'), ['Maria Lopez']);
    assert.deepEqual(names(result, 'organization'), ['Acme Corporation', 'Acme Corp.', 'Globex Ltd', 'Acme']);
    assert.deepEqual(names(result, 'place'), ['Berlin']);
    assert.deepEqual(names(result, 'date'), ['March 3, 2025']);
    assert.deepEqual(names(result, 'money'), ['$1.2 million']);
  });

  it('gives every mention offsets that slice its name out of its passage', () => {
    for (const m of result.mentions) assert.equal(passages[m.passage]!.text.slice(m.start, m.end), m.name);
  });

  it('gives "Acme Corporation", "Acme Corp." and "Acme" one canonical name, and dates and money exact ones', () => {
    const canonical = (type: string) => result.mentions.filter((m) => m.type === type).map((m) => m.canonical);
    assert.deepEqual(canonical('organization'), ['acme', 'acme', 'globex', 'acme']);
    assert.deepEqual(canonical('date'), ['2025-03-03']);
    assert.deepEqual(canonical('money'), ['usd 1200000']);
    assert.deepEqual(canonical('person'), ['maria lopez']);
  });

  it('relates Maria Lopez to Acme, Acme to Globex and Berlin, each within its sentence', () => {
    const first = NEWS.indexOf('Maria');
    const second = NEWS.indexOf('Acme is');
    const expected = [
      ['works_for', 'maria lopez', 'acme', first, NEWS.indexOf(' Acme is')],
      ['acquired', 'acme', 'globex', first, NEWS.indexOf(' Acme is')],
      ['located_in', 'acme', 'berlin', second, NEWS.length],
      ['dated', 'maria lopez', '2025-03-03', first, NEWS.indexOf(' Acme is')],
      ['paid', 'acme', 'usd 1200000', first, NEWS.indexOf(' Acme is')],
    ] as const;
    for (const [type, source, target, start, end] of expected) {
      const found = relation(result, type, source, target);
      assert.ok(found, `${type}(${source} → ${target})`);
      assert.equal(found.extractor, 'pattern');
      assert.deepEqual([found.start, found.end], [start, end], `${type} spans its sentence`);
    }
    assert.equal(NEWS.slice(relation(result, 'located_in', 'acme', 'berlin')!.start), 'Acme is based in Berlin.');
  });

  it('pairs the other entities of a sentence once with co_occurs, in text order, leaving out typed pairs', () => {
    const pairs = result.relations
      .filter((r) => r.type === 'co_occurs')
      .map((r) => {
        assert.ok(result.mentions[r.source]!.start < result.mentions[r.target]!.start);
        return `${result.mentions[r.source]!.canonical}|${result.mentions[r.target]!.canonical}`;
      });
    assert.equal(new Set(pairs).size, pairs.length);
    assert.ok(pairs.includes('maria lopez|globex'));
    assert.ok(!pairs.includes('acme|globex') && !pairs.includes('maria lopez|acme') && !pairs.includes('acme|berlin'));
    assert.ok(!pairs.some((p) => p === 'acme|acme'), 'an entity does not co-occur with itself');
  });

  it('carries each passage’s page and time span to its mentions and relations', () => {
    const transcript: Passage[] = [
      page('Nothing to see on this page.', 7),
      { text: 'Later, John Smith joined Initech Systems in Austin.', page: null, start_ms: 61_000, end_ms: 64_500 },
    ];
    const found = extractEntities(transcript);
    const john = found.mentions.find((m) => m.name === 'John Smith');
    assert.deepEqual(john && [john.passage, john.page, john.start_ms, john.end_ms], [1, null, 61_000, 64_500]);
    const joined = relation(found, 'works_for', 'john smith', 'initech systems');
    assert.ok(joined, 'works_for(John Smith → Initech Systems)');
    assert.deepEqual([joined.passage, joined.page, joined.start_ms, joined.end_ms], [1, null, 61_000, 64_500]);

    const onPage = extractEntities([page('Nothing here.', 3), page('Sarah Connor works for Cyberdyne Systems.', 12)]);
    assert.ok(onPage.mentions.length > 0 && onPage.mentions.every((m) => m.passage === 1 && m.page === 12 && m.start_ms === null));
    assert.ok(relation(onPage, 'works_for', 'sarah connor', 'cyberdyne systems'));
  });

  it('reads founders, hires and headquarters', () => {
    const text =
      'Jane Doe founded Hooli Inc. in 2004. Hooli hired Tom Baker last year. Hooli’s headquarters in Paris grew. ' +
      'Umbrella Corp was acquired by Hooli Inc.';
    const found = extractEntities([page(text)]);
    assert.ok(relation(found, 'founded', 'jane doe', 'hooli'));
    assert.ok(relation(found, 'works_for', 'tom baker', 'hooli'));
    assert.ok(relation(found, 'located_in', 'hooli', 'paris'));
    assert.ok(relation(found, 'acquired', 'hooli', 'umbrella'));
    for (const m of found.mentions) assert.equal(text.slice(m.start, m.end), m.name);
  });

  it('takes a name no dictionary knows for an organisation from its role, what it did, or a kind of business', () => {
    const text =
      'Ana Silva, CFO of Northwind Traders, met investors. Peter Gibbons joined Initech. Vandelay, acquired nothing; ' +
      'Soylent announced a recall. The plan of Kessler Robotics stalled.';
    const found = extractEntities([page(text)]);
    for (const name of ['Northwind Traders', 'Initech', 'Soylent', 'Kessler Robotics'])
      assert.ok(names(found, 'organization').includes(name), `${name}: ${JSON.stringify(found.mentions)}`);
    assert.ok(relation(found, 'works_for', 'ana silva', 'northwind traders'));
    assert.ok(relation(found, 'works_for', 'peter gibbons', 'initech'));
  });

  it('still reads names after an abbreviation or at the start of a sentence, where plain sentences are skipped', () => {
    const text = 'It rained all day and nobody went out. Mr. Holmes laughed. Watson sighed. The fire was warm.';
    const found = extractEntities([page(text)]);
    assert.deepEqual(
      found.mentions.map((m) => [m.type, m.name]),
      [
        ['person', 'Mr. Holmes'],
        ['person', 'Watson'],
      ],
    );
    for (const m of found.mentions) assert.equal(text.slice(m.start, m.end), m.name);
  });

  it('gives the same items in the same order every time', () => {
    const input = [page(NEWS), page('Hooli hired Tom Baker in Paris on 4 July 2021 for €5,000.', 2), page(NEWS, 3)];
    const once = JSON.stringify(extractEntities(input));
    assert.equal(JSON.stringify(extractEntities(input)), once);
    assert.equal(JSON.stringify(extractEntities(structuredClone(input))), once);
  });

  it('gives nothing for an empty passage, or no passages, and keeps counting passages past it', () => {
    assert.deepEqual(extractEntities([]), { mentions: [], relations: [] });
    assert.deepEqual(extractEntities([page(''), page('   \n ')]), { mentions: [], relations: [] });
    const after = extractEntities([page(''), page(NEWS)]);
    assert.ok(after.mentions.length > 0 && after.mentions.every((m) => m.passage === 1));
  });

  it('reads a 200 KB passage in chunks and keeps at most the limit of mentions per passage', () => {
    const filler = 'The committee met again and talked about the budget in some detail before it went home. ';
    const long = Array.from({ length: 120 }, () => filler.repeat(20) + NEWS).join(' ');
    assert.ok(long.length > 200_000);
    const all = extractEntities([page(long)]);
    assert.ok(all.mentions.length > 900 && all.mentions.length <= 2000, `${all.mentions.length} mentions`);
    assert.ok(
      all.mentions.some((m) => m.start > 190_000),
      'mentions from the end of the passage',
    );
    for (const m of all.mentions) assert.equal(long.slice(m.start, m.end), m.name);

    const capped = extractEntities([page(long), page(NEWS, 2)], { mentionsPerPassage: 500 });
    assert.equal(capped.mentions.filter((m) => m.passage === 0).length, 500);
    assert.equal(capped.mentions.filter((m) => m.passage === 1).length, 8, 'the next passage has its own allowance');
    for (const r of capped.relations) assert.ok(capped.mentions[r.source] && capped.mentions[r.target]);
  });
});

describe('entity extraction in a thread of its own', () => {
  it('finds what it finds in this thread, leaving this thread free while it reads a large slice', async () => {
    // 200,000 characters, the most the graph stage reads at once: seconds of analysis.
    const text = NEWS.repeat(Math.ceil(50_000 / NEWS.length)).slice(0, 50_000);
    const slice = [page(text, 1), page(text, 2), page(text, 3), page(text, 4)];
    const { stalledMs, settled } = await longestStall(() => extractEntitiesInThread(slice));
    assert.equal(settled.status, 'fulfilled');
    const found = (settled as PromiseFulfilledResult<EntityExtraction>).value;
    assert.deepEqual(found, extractEntities(slice));
    assert.ok(found.mentions.length > 1_000, `${found.mentions.length} mentions`);
    assert.ok(stalledMs < 1_000, `this thread's timers waited ${stalledMs} ms`);
  });
});

describe('canonicalName', () => {
  it('treats legal forms, "the", possessives, case, spacing and diacritics alike', () => {
    for (const name of ['Acme Corp.', 'Acme Corporation', 'the  ACME Inc.', 'Acme, Inc.', 'Acme’s', 'ＡＣＭＥ Ltd']) {
      assert.equal(canonicalName('organization', name), 'acme', name);
    }
    assert.equal(canonicalName('person', 'José  Álvarez'), 'jose alvarez');
    assert.equal(canonicalName('person', 'Dr. Maria Lopez'), 'maria lopez');
    assert.equal(canonicalName('place', 'the United States'), 'united states');
    assert.equal(canonicalName('organization', 'Corp.'), 'corp', 'a name that is only a legal form keeps it');
  });

  it('writes dates in ISO form when they do not depend on today, and leaves the rest as text', () => {
    assert.equal(canonicalName('date', 'March 3, 2025'), '2025-03-03');
    assert.equal(canonicalName('date', '3 March 2025'), '2025-03-03');
    assert.equal(canonicalName('date', 'March 2025'), '2025-03');
    assert.equal(canonicalName('date', 'March 3'), 'march 3');
    assert.equal(canonicalName('date', 'Yesterday'), 'yesterday');
  });

  it('writes money as a currency code and an exact amount', () => {
    assert.equal(canonicalName('money', '$1.2 million'), 'usd 1200000');
    assert.equal(canonicalName('money', 'USD 2,000'), 'usd 2000');
    assert.equal(canonicalName('money', '€1.1bn'), 'eur 1100000000');
    assert.equal(canonicalName('money', '£3.75'), 'gbp 3.75');
    assert.equal(canonicalName('money', '5 million dollars'), 'usd 5000000');
  });
});
