/**
 * Requests Node's HTTP parser refuses before Koa sees them: a request line and headers over the size limit,
 * bytes that are not HTTP/1.1, a request that did not arrive in time. Node would answer them with a bare status
 * line; they get the one error body instead, like every other refusal.
 */
import { maxHeaderSize, STATUS_CODES, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { ApiError, errorBody } from './errors.js';

// Once the answer is written, how long a client that keeps sending may hold the connection before it is cut.
const LINGER_MS = 2_000;

function refusalOf(err: NodeJS.ErrnoException): ApiError {
  switch (err.code) {
    case 'HPE_HEADER_OVERFLOW':
      return new ApiError(
        431,
        'invalid_request_error',
        'request_header_too_large',
        `The request line and headers exceed ${maxHeaderSize} bytes; send long values in a JSON body instead of the URL.`,
      );
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return new ApiError(413, 'invalid_request_error', 'body_too_large', 'The chunk extensions of the body are too large.');
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new ApiError(408, 'invalid_request_error', 'request_timeout', 'The request did not arrive in time.');
    default:
      return new ApiError(400, 'invalid_request_error', 'malformed_request', 'The request is not valid HTTP/1.1.');
  }
}

/** The whole answer, written to the socket: there is no response object once the parser has given up. */
function answerOf(refusal: ApiError): string {
  const body = JSON.stringify(errorBody(refusal));
  return [
    `HTTP/1.1 ${refusal.status} ${STATUS_CODES[refusal.status]}`,
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
    '',
    body,
  ].join('\r\n');
}

export function answerParserRefusals(server: Server): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
    // A connection reset, or one whose answer has begun, has no one to tell: Node's own handler does the same.
    const answering = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (err.code === 'ECONNRESET' || !socket.writable || answering?.headersSent) {
      socket.destroy();
      return;
    }
    // Closing only our side lets the client read the answer before the connection goes: a reset sent while
    // its request is still arriving could discard the answer on its side.
    socket.end(answerOf(refusalOf(err)));
    setTimeout(() => socket.destroy(), LINGER_MS).unref();
  });
}
