// The names of the IANA time zone database (zones and links, in their exact spelling), which Temporal's
// schedules look up case-sensitively: records/timezone-names.ts, from a zic input file such as Debian's
// /usr/share/zoneinfo/tzdata.zi (`node scripts/generate-timezone-names.mjs [path]`). Run it when a new release
// of the database adds names; until then a new name is refused as unknown, never passed to Temporal misspelt.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const source = process.argv[2] ?? '/usr/share/zoneinfo/tzdata.zi';
const text = readFileSync(source, 'utf8');
const version = /^# version (\S+)$/m.exec(text)?.[1];
if (!version) throw new Error(`${source} names no version: is it a zic input file?`);
const names = new Set();
for (const line of text.split('\n')) {
  const fields = line.split(/\s+/);
  // A zone: `Z <name> …`; a link: `L <target> <name>`.
  if (fields[0] === 'Z') names.add(fields[1]);
  else if (fields[0] === 'L') names.add(fields[2]);
}
const sorted = [...names].sort();
const out = fileURLToPath(new URL('../records/timezone-names.ts', import.meta.url));
writeFileSync(
  out,
  `/**
 * Generated from the IANA time zone database ${version} by scripts/generate-timezone-names.mjs: do not edit.
 * Every zone's and link's name, spelt as the database spells it.
 */
export const TZDB_VERSION = '${version}';

export const TIMEZONE_NAMES: readonly string[] = [
${sorted.map((name) => `  '${name}',`).join('\n')}
];
`,
);
console.log(`${sorted.length} names of tzdb ${version} written to ${out}`);
