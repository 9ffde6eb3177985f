/**
 * Baseline for the upload benchmark: plain node:http on loopback that streams each POSTed body to a
 * new file under UPLOAD_DIR and answers with the byte count. No parsing, hashing or database.
 */
import { createServer } from 'node:http';
import { createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';

const dir = process.env.UPLOAD_DIR;
if (!dir) throw new Error('set UPLOAD_DIR');
let received = 0;

const server = createServer((req, res) => {
  if (req.method !== 'POST') {
    res.end('ok');
    return;
  }
  const out = createWriteStream(join(dir, `upload-${++received}`), { flags: 'wx' });
  pipeline(req, out).then(
    () => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ bytes: out.bytesWritten }));
    },
    (err: Error) => {
      res.statusCode = 500;
      res.end(err.message);
    },
  );
});

server.listen(Number(process.env.PORT ?? 0), '127.0.0.1');
process.on('SIGTERM', () => server.close(() => process.exit(0)));
