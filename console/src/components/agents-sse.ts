/**
 * Server-Sent Events read from a fetch response's body, for streams an EventSource cannot open (the answer
 * to `POST …/run` with `stream: true`). Follows the WHATWG parsing rules for the fields a run's log uses.
 */
export interface SseMessage {
  id?: string;
  event: string;
  data: string;
}

export async function* readSse(body: ReadableStream<Uint8Array>, signal?: AbortSignal): AsyncGenerator<SseMessage> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const stop = () => void reader.cancel().catch(() => undefined);
  signal?.addEventListener('abort', stop);
  let buffered = '';
  let message: { id?: string; event?: string; data: string[] } = { data: [] };
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffered += decoder.decode(value, { stream: true });
      let end: number;
      while ((end = buffered.search(/\r\n|\r|\n/)) !== -1) {
        // A CR last in the buffer may be the first half of a CRLF still on its way.
        if (end === buffered.length - 1 && buffered[end] === '\r') break;
        const line = buffered.slice(0, end);
        buffered = buffered.slice(end + (buffered.startsWith('\r\n', end) ? 2 : 1));
        if (line === '') {
          if (message.data.length > 0) yield { id: message.id, event: message.event ?? 'message', data: message.data.join('\n') };
          message = { data: [] };
          continue;
        }
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon === -1 ? line : line.slice(0, colon);
        const text = colon === -1 ? '' : line.slice(colon + (line[colon + 1] === ' ' ? 2 : 1));
        if (field === 'data') message.data.push(text);
        else if (field === 'event') message.event = text;
        else if (field === 'id') message.id = text;
      }
    }
  } finally {
    signal?.removeEventListener('abort', stop);
    reader.releaseLock();
  }
}
