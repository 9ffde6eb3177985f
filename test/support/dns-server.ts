/**
 * A DNS server on loopback (UDP) for the names a test chooses: it answers A queries for the names it
 * knows, stays silent for the names it is told to ignore (a host whose name servers never answer), and
 * answers NXDOMAIN for the rest. It counts the queries for each name it received.
 */
import { createSocket } from 'node:dgram';
import type { AddressInfo } from 'node:net';

export interface TestDnsServer {
  /** `127.0.0.1:<port>`, as a resolver's server list takes it. */
  address: string;
  /** Queries received for `name`, answered or not. */
  queriesFor(name: string): number;
  close(): Promise<void>;
}

const TYPE_A = 1;
const CLASS_IN = 1;

/** The queried name and where the question section ends; null for a message that is not a query. */
function questionOf(message: Buffer): { name: string; type: number; end: number } | null {
  if (message.length < 12 || (message[2]! & 0x80) !== 0 || message.readUInt16BE(4) !== 1) return null;
  const labels: string[] = [];
  let at = 12;
  while (at < message.length && message[at] !== 0) {
    const length = message[at]!;
    labels.push(message.toString('latin1', at + 1, at + 1 + length));
    at += 1 + length;
  }
  if (at + 5 > message.length) return null;
  return { name: labels.join('.').toLowerCase(), type: message.readUInt16BE(at + 1), end: at + 5 };
}

function answer(query: Buffer, question: { type: number; end: number }, address: string | undefined): Buffer {
  const header = Buffer.alloc(12);
  query.copy(header, 0, 0, 2);
  // A response to a recursive query, recursion available; NXDOMAIN for a name this server does not know.
  header.writeUInt16BE(address === undefined ? 0x8183 : 0x8180, 2);
  header.writeUInt16BE(1, 4);
  const records = address !== undefined && question.type === TYPE_A ? 1 : 0;
  header.writeUInt16BE(records, 6);
  const parts = [header, query.subarray(12, question.end)];
  if (records) {
    const record = Buffer.alloc(16);
    record.writeUInt16BE(0xc00c, 0); // the name: a pointer to the question's
    record.writeUInt16BE(TYPE_A, 2);
    record.writeUInt16BE(CLASS_IN, 4);
    record.writeUInt32BE(60, 6);
    record.writeUInt16BE(4, 10);
    address!.split('.').forEach((octet, i) => record.writeUInt8(Number(octet), 12 + i));
    parts.push(record);
  }
  return Buffer.concat(parts);
}

export async function startDnsServer({ answers, silent }: { answers: Record<string, string>; silent: string[] }): Promise<TestDnsServer> {
  const queries = new Map<string, number>();
  const socket = createSocket('udp4');
  socket.on('message', (message, from) => {
    const question = questionOf(message);
    if (!question) return;
    queries.set(question.name, (queries.get(question.name) ?? 0) + 1);
    if (silent.includes(question.name)) return;
    socket.send(answer(message, question, answers[question.name]), from.port, from.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  const { port } = socket.address() as AddressInfo;
  return {
    address: `127.0.0.1:${port}`,
    queriesFor: (name) => queries.get(name.toLowerCase()) ?? 0,
    close: () => new Promise((resolve) => socket.close(() => resolve())),
  };
}
