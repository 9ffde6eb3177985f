/**
 * Baseline for the reads benchmark: Koa and a pg pool (the same size as the API's) answering
 * GET /v1/files/:id with one `SELECT * FROM files WHERE id = $1`. No authentication, logging,
 * metrics or presentation.
 */
import Koa from 'koa';
import pg from 'pg';

const connectionString = process.env.DATABASE_URL;
if (!connectionString) throw new Error('set DATABASE_URL');
const pool = new pg.Pool({ connectionString, max: 10 });
const FILE_PATH = /^\/v1\/files\/([^/]+)$/;

const app = new Koa();
app.use(async (ctx) => {
  if (ctx.method !== 'GET') return;
  if (ctx.path === '/healthz') {
    ctx.body = { status: 'ok' };
    return;
  }
  const id = FILE_PATH.exec(ctx.path)?.[1];
  if (!id) return;
  const { rows } = await pool.query('SELECT * FROM files WHERE id = $1', [id]);
  if (rows[0]) ctx.body = rows[0];
});

const server = app.listen(Number(process.env.PORT ?? 0), '127.0.0.1');
process.on('SIGTERM', () => server.close(() => pool.end().then(() => process.exit(0))));
