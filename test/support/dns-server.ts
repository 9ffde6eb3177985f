/**
 * A DNS server on loopback (UDP, the real wire format) that answers A queries for the names it is given
 * and never answers for any other name, as a domain whose name servers are unreachable.
 */
import { createSocket } from 'node:dgram';

export interface TestDnsServer {
  /** `127.0.0.1:<port>`, as AGENTPLANE_DNS_SERVERS takes it. */
  address: string;
  /** Every name asked about, once per query. */
  asked: string[];
  close(): Promise<void>;
}

const TYPE_A = 1;

/** `answers`: a name (lowercase, no trailing dot) and the IPv4 address its A query answers. */
export async function startDnsServer(answers: Record<string, string>): Promise<TestDnsServer> {
  const asked: string[] = [];
  const socket = createSocket('udp4');
  socket.on('message', (query, peer) => {
    const { name, type, end } = questionOf(query);
    asked.push(name);
    const address = answers[name];
    if (address === undefined) return;
    const records = type === TYPE_A ? [address] : [];
    const header = Buffer.alloc(12);
    query.copy(header, 0, 0, 2);
    header.writeUInt16BE(0x8180, 2); // a response, recursion desired and available, no error
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(records.length, 6);
    const answerRecords = records.map((a) => {
      const record = Buffer.alloc(16);
      record.writeUInt16BE(0xc00c, 0); // the name, as in the question
      record.writeUInt16BE(TYPE_A, 2);
      record.writeUInt16BE(1, 4); // IN
      record.writeUInt32BE(60, 6);
      record.writeUInt16BE(4, 10);
      a.split('.').forEach((octet, i) => record.writeUInt8(Number(octet), 12 + i));
      return record;
    });
    socket.send(Buffer.concat([header, query.subarray(12, end), ...answerRecords]), peer.port, peer.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return {
    address: `127.0.0.1:${socket.address().port}`,
    asked,
    close: () => new Promise((resolve) => socket.close(() => resolve())),
  };
}

/** The question's name and type, and where the question ends. */
function questionOf(query: Buffer): { name: string; type: number; end: number } {
  const labels: string[] = [];
  let at = 12;
  for (let length = query.readUInt8(at); length > 0; length = query.readUInt8(at)) {
    labels.push(query.toString('ascii', at + 1, at + 1 + length));
    at += 1 + length;
  }
  return { name: labels.join('.').toLowerCase(), type: query.readUInt16BE(at + 1), end: at + 5 };
}
