/**
 * An API and worker of their own (in their own Temporal namespace, so no other worker takes their runs)
 * wired to loopback servers that speak the OpenAI and Anthropic wire protocols.
 */
import { newTenant, startTestApi, type Tenant, type TestApi, type TestApiOptions } from './api.js';
import { isolatedNamespace } from './services.js';
import { startOpenAiServer, type OpenAiServer } from './model-servers/openai.js';
import { startAnthropicServer } from './model-servers/anthropic.js';
import type { ModelServer } from './model-servers/scripted-server.js';
export { createAgent, runSatisfying } from './agents.js';

export interface RunsStack {
  api: TestApi;
  openai: OpenAiServer;
  anthropic: ModelServer;
  tenant: Tenant;
  stop(): Promise<void>;
}

export async function startRunsStack(
  name: string,
  modelEnv: NodeJS.ProcessEnv = {},
  options: Pick<TestApiOptions, 'rateLimits' | 'workerPools' | 'eventStreamLimits' | 'db'> = {},
): Promise<RunsStack> {
  const openai = await startOpenAiServer({ models: ['local-llama'] });
  const anthropic = await startAnthropicServer();
  const api = await startTestApi({
    namespace: await isolatedNamespace(name),
    modelEnv: { OPENAI_BASE_URL: openai.url, ANTHROPIC_BASE_URL: anthropic.url, ANTHROPIC_API_KEY: 'sk-ant-test', ...modelEnv },
    ...options,
  });
  const tenant = await newTenant(api, name);
  return {
    api,
    openai,
    anthropic,
    tenant,
    async stop() {
      await api.stop();
      await openai.stop();
      await anthropic.stop();
    },
  };
}
