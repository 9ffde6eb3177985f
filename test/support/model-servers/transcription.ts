/**
 * A loopback server speaking OpenAI's speech-to-text wire format: `POST /v1/audio/transcriptions` takes
 * multipart form data (the audio in `file`, the options as fields) and answers the scripted verbose JSON,
 * or an error status with OpenAI's error body.
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import busboy from 'busboy';

export interface TranscriptionRequest {
  /** Every form field, by name, in the order sent (`timestamp_granularities[]` comes once per value). */
  fields: Record<string, string[]>;
  file: { name: string; bytes: Buffer } | null;
}

export interface TranscriptionServer {
  /** The base URL the OpenAI SDK takes, ending in /v1. */
  url: string;
  requests: TranscriptionRequest[];
  /** What the next requests are answered with: a verbose JSON body, or an error status and message. */
  answer(reply: { body: unknown } | { status: number; message: string }): void;
  stop(): Promise<void>;
}

function sendError(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(
    JSON.stringify({
      error: { message, type: status >= 500 ? 'server_error' : 'invalid_request_error', param: status === 400 ? 'file' : null, code: null },
    }),
  );
}

export async function startTranscriptionServer(): Promise<TranscriptionServer> {
  const requests: TranscriptionRequest[] = [];
  let reply: { body: unknown } | { status: number; message: string } = { status: 500, message: 'no reply scripted' };
  const server = createServer((req, res) => {
    if (req.method !== 'POST' || req.url !== '/v1/audio/transcriptions') return sendError(res, 404, `no route ${req.method} ${req.url}`);
    const request: TranscriptionRequest = { fields: {}, file: null };
    const form = busboy({ headers: req.headers });
    form.on('field', (name, value) => (request.fields[name] ??= []).push(value));
    form.on('file', (_name, stream, info) => {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => (request.file = { name: info.filename ?? '', bytes: Buffer.concat(chunks) }));
    });
    form.on('close', () => {
      requests.push(request);
      if ('status' in reply) return sendError(res, reply.status, reply.message);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(reply.body));
    });
    form.on('error', (err: Error) => sendError(res, 400, err.message));
    req.pipe(form);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    answer: (next) => (reply = next),
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
