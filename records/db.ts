/**
 * The PostgreSQL pool and the one way to run several statements atomically. A database that cannot be
 * reached, or that drops a connection, surfaces as DatabaseUnavailableError and never ends the process.
 */
import pg from 'pg';
import type { Logger } from 'pino';

export interface Queryable {
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string | Statement, values?: unknown[]): Promise<pg.QueryResult<R>>;
}

/**
 * A statement PostgreSQL parses and plans once per connection instead of at every call. For the reads nearly
 * every request makes (a record by its id) and the statements every run makes, where parsing and planning are
 * much of the database's work. Its text is fixed when its module loads, so a connection holds a bounded set.
 */
export interface Statement {
  readonly name: string;
  readonly text: string;
}

const statements = new Map<string, string>();

/** Names are checked as modules load: a connection refuses a known name given another text. */
export function statement(name: string, text: string): Statement {
  const known = statements.get(name);
  if (known !== undefined && known !== text) throw new Error(`two statements are named ${name}`);
  statements.set(name, text);
  return { name, text };
}

/** PostgreSQL could not be reached, or lost the connection mid-way: the same work may succeed later. */
export class DatabaseUnavailableError extends Error {
  constructor(cause: unknown) {
    super(`the database is unavailable: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'DatabaseUnavailableError';
  }
}

// bigint columns (file sizes) fit comfortably in a JS number below 2^53.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));

// A caller waits at most this long for a connection (a full pool, a server that accepts but never
// answers); then it is told the database is unavailable rather than hanging.
const CONNECTION_TIMEOUT_MS = 5_000;

// Sent by a server that cannot serve this session: connection exceptions (class 08), shutdown, crash
// and start-up (57P01–57P03), too many connections (53300).
const outageState = (code: string) => code.startsWith('08') || ['57P01', '57P02', '57P03', '53300'].includes(code);
// Reported by Node's sockets when the server is gone or unreachable.
const SOCKET_FAILURES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE', 'EAI_AGAIN']);

function signalsOutage(err: unknown): boolean {
  if (err instanceof pg.DatabaseError) return err.code !== undefined && outageState(err.code);
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && SOCKET_FAILURES.has(code);
}

export interface DbOptions {
  /** Where connections lost while idle in the pool are reported. */
  log: Pick<Logger, 'warn'>;
  max?: number;
}

export class Db implements Queryable {
  private readonly pool: pg.Pool;
  // The error each client's connection failed with, recorded by a listener that stays for the client's
  // whole life: a client that errors while checked out would otherwise throw it as an unhandled 'error'.
  private readonly lost = new WeakMap<pg.PoolClient, unknown>();

  constructor(
    /** For the few that need a connection of their own, outside the pool (LISTEN). */
    readonly connectionString: string,
    { log, max = 10 }: DbOptions,
  ) {
    this.pool = new pg.Pool({ connectionString, max, idleTimeoutMillis: 30_000, connectionTimeoutMillis: CONNECTION_TIMEOUT_MS });
    this.pool.on('connect', (client) => client.on('error', (err) => this.lost.set(client, err)));
    // An idle client losing its connection; the pool drops it and opens another when one is needed.
    this.pool.on('error', (err) => log.warn({ err }, 'an idle database connection was lost'));
  }

  /** A client of its own, to be given back with `release()` (or `release(err)` when it broke). */
  async connect(): Promise<pg.PoolClient> {
    try {
      return await this.pool.connect();
    } catch (err) {
      // Failing to open a connection is an outage (refused, reset, timed out, closed mid-start-up) unless
      // the server answered with another kind of error (a wrong password, an unknown database) or this
      // process has ended the pool.
      if (this.pool.ending || (err instanceof pg.DatabaseError && !signalsOutage(err))) throw err;
      throw new DatabaseUnavailableError(err);
    }
  }

  async query<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string | Statement, values?: unknown[]): Promise<pg.QueryResult<R>> {
    const client = await this.connect();
    let result: pg.QueryResult<R>;
    try {
      result = await client.query<R>(text, values);
    } catch (err) {
      if (this.connectionLost(client, err)) throw this.discard(client, err);
      client.release();
      throw err;
    }
    client.release();
    return result;
  }

  /** Runs `work` in one transaction on one client: committed if it resolves, rolled back if it throws. */
  async transaction<T>(work: (tx: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.connect();
    let result: T;
    try {
      await client.query('BEGIN');
      result = await work(client);
      await client.query('COMMIT');
    } catch (err) {
      if (this.connectionLost(client, err)) throw this.discard(client, err);
      // A client whose rollback failed may still be inside the transaction: it is closed, not reused.
      const rollbackFailure = await client.query('ROLLBACK').then(
        () => undefined,
        (rollbackErr: unknown) => brokenBy(rollbackErr),
      );
      client.release(rollbackFailure);
      throw err;
    }
    client.release();
    return result;
  }

  end(): Promise<void> {
    return this.pool.end();
  }

  private connectionLost(client: pg.PoolClient, err: unknown): boolean {
    return this.lost.has(client) || signalsOutage(err);
  }

  /** Gives a client whose connection is gone back as broken (the pool closes it); says why for the caller. */
  private discard(client: pg.PoolClient, err: unknown): DatabaseUnavailableError {
    client.release(brokenBy(err));
    return new DatabaseUnavailableError(err);
  }
}

/** What `release` takes to close a client rather than keep it. */
const brokenBy = (err: unknown): Error | true => (err instanceof Error ? err : true);

export function createDb(connectionString: string, options: DbOptions): Db {
  return new Db(connectionString, options);
}

export function transaction<T>(db: Db, work: (tx: pg.PoolClient) => Promise<T>): Promise<T> {
  return db.transaction(work);
}
