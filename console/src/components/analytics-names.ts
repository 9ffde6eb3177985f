/**
 * Names for the ids a report is grouped by (agents, networks, API keys), so that a chart's legend reads
 * "geo" rather than an id. A key without the scope to list them gets ids alone.
 */
import { api, unwrap } from '../api';
import { useApi } from '../use-api';
import type { Dimension } from './analytics-group';

const PAGES = 5;

type Named = { id: string; name: string | null };

async function namesOf(
  list: (after: string | undefined) => Promise<{ data?: Named[]; has_more: boolean; last_id: string | null }>,
): Promise<Map<string, string>> {
  const names = new Map<string, string>();
  let after: string | undefined;
  for (let page = 0; page < PAGES; page++) {
    const answer = await list(after);
    for (const item of answer.data ?? []) if (item.name) names.set(item.id, item.name);
    if (!answer.has_more || !answer.last_id) break;
    after = answer.last_id;
  }
  return names;
}

export function useNames(dimension: Dimension | null): Map<string, string> {
  const loaded = useApi(
    async (signal) => {
      const query = (after: string | undefined) => ({ params: { query: { limit: 100, ...(after ? { after } : {}) } }, signal });
      try {
        if (dimension === 'agent_id') return await namesOf(async (after) => unwrap(await api.GET('/v1/agents', query(after))));
        if (dimension === 'network_id') return await namesOf(async (after) => unwrap(await api.GET('/v1/networks', query(after))));
        if (dimension === 'api_key_id') return await namesOf(async (after) => unwrap(await api.GET('/v1/api-keys', query(after))));
      } catch {
        // Ids alone, then.
      }
      return new Map<string, string>();
    },
    [dimension],
  );
  return loaded.data ?? EMPTY;
}

const EMPTY = new Map<string, string>();
