import assert from 'node:assert/strict';
import { targetOfToolName, toolNameOf } from '../../api/routes/mcp/tool-names.js';
import { newId } from '../../records/ids.js';

describe('MCP tool names of agents and networks', () => {
  const agent = { kind: 'agent' as const, id: newId('agent') };
  const network = { kind: 'network' as const, id: newId('net') };

  it('keeps a plain name, lowered, before the id', () => {
    assert.equal(toolNameOf(agent, 'Support'), `support__${agent.id}`);
    assert.equal(toolNameOf(network, 'triage-team'), `triage_team__${network.id}`);
  });

  it('turns any name into letters, digits and single underscores, at most 64 characters with the id', () => {
    for (const name of ['Größe & Maß — ünïcode', '日本語のエージェント', '   ', '__a__b__', 'x'.repeat(500), 'a/b.c d', '🙂🙂']) {
      const tool = toolNameOf(agent, name);
      assert.match(tool, /^[a-z0-9_]+__agent_[A-Za-z0-9]+$/, name);
      assert.ok(tool.length <= 64, `${tool} is ${tool.length} long`);
      assert.deepEqual(targetOfToolName(tool), agent, tool);
    }
    assert.equal(toolNameOf(agent, 'Café Crème'), `cafe_creme__${agent.id}`, 'accents are dropped, not the letters');
    assert.equal(toolNameOf(agent, '日本語'), `agent__${agent.id}`, 'a name with nothing left names the tool by its kind');
  });

  it('resolves a name by the id after its last `__`, and nothing else', () => {
    assert.deepEqual(targetOfToolName(`old_name__${agent.id}`), agent);
    assert.deepEqual(targetOfToolName(`x__${network.id}`), network);
    for (const name of ['search_context', 'agent_abc', `x__file_abc`, `x__agent_`, `x__agent_a-b`, `${'y'.repeat(40)}__${agent.id}`]) {
      assert.equal(targetOfToolName(name), null, name);
    }
  });
});
