/**
 * Expand, then contract: a migration must leave the schema usable by the release before it, whose API and
 * worker pods keep serving while a rolling update replaces them. An expanding migration only adds (tables,
 * nullable columns or columns with a default, indexes, functions); a statement that would break the previous
 * release's reads or writes belongs to a contracting migration, released once no release still running uses
 * what it removes, and marked so in its first lines: `-- contract: <what no running release uses any more>`.
 * docs/operations.md says how a release follows it.
 */

/** The first migration the rule holds for: the ones before it were never applied under a rolling update. */
export const FIRST_CHECKED_MIGRATION = '017';

export interface MigrationFinding {
  statement: string;
  rule: string;
}

const CONTRACT_MARK = /^\s*--\s*contract:\s*\S/m;

/** Statements only a contracting migration may hold, each with what it would break for the release before. */
const CONTRACTING: [RegExp, string][] = [
  [/\bDROP\s+(TABLE|VIEW|MATERIALIZED\s+VIEW|TYPE|FUNCTION|TRIGGER|SEQUENCE)\b/i, 'drops what the previous release may still use'],
  [/\bDROP\s+COLUMN\b/i, 'drops a column the previous release may still read or write'],
  [/\bDROP\s+INDEX\b/i, "drops an index the previous release's upserts may name"],
  [/\bRENAME\b/i, 'renames what the previous release names by its old name'],
  [/\bALTER\s+COLUMN\s+\S+\s+(SET\s+DATA\s+)?TYPE\b/i, "changes a column's type under the previous release"],
  [/\bALTER\s+COLUMN\s+\S+\s+SET\s+NOT\s+NULL\b/i, 'forbids the nulls the previous release may write'],
  [/\bADD\s+(CONSTRAINT\s+\S+\s+)?(CHECK|UNIQUE|FOREIGN\s+KEY|PRIMARY\s+KEY|EXCLUDE)\b/i, 'refuses writes the previous release may make'],
];

/** Comments and the bodies of dollar-quoted functions go: only the statements themselves are judged. */
function statementsOf(sql: string): string[] {
  const bare = sql.replace(/\$(\w*)\$[\s\S]*?\$\1\$/g, "''").replace(/--[^\n]*/g, '');
  return bare
    .split(';')
    .map((statement) => statement.replace(/\s+/g, ' ').trim())
    .filter(Boolean);
}

/** Tables the migration itself creates: what it adds to them breaks no earlier release. */
function tablesCreatedIn(statements: string[]): Set<string> {
  const created = new Set<string>();
  for (const statement of statements) {
    const match = /^CREATE\s+(UNLOGGED\s+)?TABLE\s+(IF\s+NOT\s+EXISTS\s+)?("?[\w.]+"?)/i.exec(statement);
    if (match) created.add(match[3]!.replace(/"/g, '').toLowerCase());
  }
  return created;
}

const tableOf = (statement: string): string | undefined =>
  /^ALTER\s+TABLE\s+(IF\s+EXISTS\s+)?(ONLY\s+)?("?[\w.]+"?)/i.exec(statement)?.[3]?.replace(/"/g, '').toLowerCase() ??
  /^CREATE\s+UNIQUE\s+INDEX\s+.*?\bON\s+(ONLY\s+)?("?[\w.]+"?)/i.exec(statement)?.[2]?.replace(/"/g, '').toLowerCase();

/** What in a migration's SQL would break the release before it; nothing for a migration marked contracting. */
export function findingsOf(sql: string): MigrationFinding[] {
  if (CONTRACT_MARK.test(sql)) return [];
  const statements = statementsOf(sql);
  const created = tablesCreatedIn(statements);
  const findings: MigrationFinding[] = [];
  for (const statement of statements) {
    const table = tableOf(statement);
    if (table && created.has(table)) continue;
    for (const [pattern, rule] of CONTRACTING) if (pattern.test(statement)) findings.push({ statement, rule });
    for (const column of statement.match(/\bADD\s+(COLUMN\s+)?(IF\s+NOT\s+EXISTS\s+)?[^,]*/gi) ?? []) {
      if (/\bNOT\s+NULL\b/i.test(column) && !/\bDEFAULT\b/i.test(column) && !/\bGENERATED\b/i.test(column))
        findings.push({ statement, rule: 'adds a NOT NULL column without a default, which the previous release does not write' });
    }
    if (/^CREATE\s+UNIQUE\s+INDEX\b/i.test(statement))
      findings.push({ statement, rule: 'refuses duplicates the previous release may write to a table it already has' });
  }
  return findings;
}
