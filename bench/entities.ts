/**
 * The entity extraction benchmark: about 1 MB of generated business prose (one sentence in three names
 * people, companies, places, dates or money; the rest is ordinary narrative) cut into 200 pages, read by
 * extractEntities in one process. `node dist/bench/entities.js` prints the figures.
 *   chars/s       characters over wall time, after one warm-up page (loading the libraries is not counted)
 *   CPU ms/1000   CPU time of the process per 1,000 characters; the goal is well under 10
 *   RSS +MB       resident memory at the end minus before, a rough bound on what the extraction holds
 */
import { fileURLToPath } from 'node:url';
import { extractEntities, type Passage } from '../workflows/extraction/engines/entities.js';

export interface EntityFigures {
  characters: number;
  pages: number;
  mentions: number;
  relations: number;
  charsPerSecond: number;
  cpuMsPer1000Chars: number;
  rssIncreaseMb: number;
}

const PEOPLE = ['Maria Lopez', 'John Smith', 'Aiko Tanaka', 'Peter Novak', 'Fatima Khan', 'David Brown', 'Elena Petrova', 'Samuel Okafor'];
const COMPANIES = ['Acme Corp.', 'Globex Ltd', 'Initech Inc.', 'Umbrella Corporation', 'Hooli', 'Stark Industries', 'Wayne Enterprises'];
const PLACES = ['Berlin', 'Paris', 'Tokyo', 'Chicago', 'Lagos', 'Madrid', 'Toronto', 'Mumbai'];
const MONTHS = ['January', 'March', 'May', 'July', 'September', 'November'];
const NARRATIVE = [
  'The meeting ran long, and most of the room had stopped taking notes by the time the last slide came up.',
  'Nobody expected the numbers to move that quickly, least of all the people who had spent a year preparing for it.',
  'It was raining again when the team finally left the building, tired but more or less satisfied with the day.',
  'The plan was simple on paper: fewer products, better support, and a sales team that listened before it talked.',
  'Some of the older staff were sceptical, and they said so, politely but more than once.',
  'By the end of the quarter the warehouse was half empty and the phones had gone quiet.',
];

/** A deterministic generator (mulberry32), so every run reads the same text. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function businessProse(characters: number, pages: number): Passage[] {
  const next = random(42);
  const pick = <T>(items: T[]): T => items[Math.floor(next() * items.length)]!;
  const factual = [
    () =>
      `${pick(PEOPLE)}, CEO of ${pick(COMPANIES)}, spoke in ${pick(PLACES)} on ${pick(MONTHS)} ${1 + Math.floor(next() * 28)}, ${2000 + Math.floor(next() * 25)}.`,
    () => `${pick(COMPANIES)} acquired ${pick(COMPANIES)} for $${(1 + next() * 900).toFixed(1)} million.`,
    () => `${pick(PEOPLE)} joined ${pick(COMPANIES)} after ten years at ${pick(COMPANIES)}.`,
    () => `${pick(COMPANIES)} is based in ${pick(PLACES)} and paid €${Math.floor(next() * 90_000)} in fees last year.`,
  ];
  const perPage = Math.ceil(characters / pages);
  return Array.from({ length: pages }, (_, page) => {
    let text = '';
    while (text.length < perPage) text += `${next() < 1 / 3 ? pick(factual)() : pick(NARRATIVE)} `;
    return { text: text.trimEnd(), page: page + 1, start_ms: null, end_ms: null };
  });
}

export function measureEntities(characters = 1_000_000, pages = 200): EntityFigures {
  const passages = businessProse(characters, pages);
  extractEntities(passages.slice(0, 1));
  const total = passages.reduce((sum, p) => sum + p.text.length, 0);
  const rssBefore = process.memoryUsage().rss;
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  const { mentions, relations } = extractEntities(passages);
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  return {
    characters: total,
    pages,
    mentions: mentions.length,
    relations: relations.length,
    charsPerSecond: Math.round(total / seconds),
    cpuMsPer1000Chars: Number(((cpu.user + cpu.system) / 1000 / (total / 1000)).toFixed(2)),
    rssIncreaseMb: Math.round((process.memoryUsage().rss - rssBefore) / (1024 * 1024)),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(measureEntities());
}
