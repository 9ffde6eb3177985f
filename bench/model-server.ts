/**
 * The model the runs benchmark calls: the test suite's loopback OpenAI-compatible server, in a process
 * of its own, answering every chat completion at once with the same short streamed reply, so that what
 * a run costs beyond it is the platform's. The isolation benchmark's hostile tenant gives it orders
 * instead (test/support/model-servers/prompted.ts).
 */
import { startOpenAiServer } from '../test/support/model-servers/openai.js';
import { promptedReplies } from '../test/support/model-servers/prompted.js';
import { BENCH_MODEL, BENCH_REPLY } from './runs.js';

const server = await startOpenAiServer({ models: [BENCH_MODEL], port: Number(process.env.PORT ?? 0) });
server.setFallback(promptedReplies({ text: BENCH_REPLY, usage: { input: 40, output: 4 } }));
process.on('SIGTERM', () => void server.stop().then(() => process.exit(0)));
