import Database from 'better-sqlite3';

/**
 * The hot read path: a read-only connection to the same SQLite file with
 * prepared statements cached. MikroORM stays the way to write and to run
 * everything else; the few reads on every request (profile, plan, models,
 * health) come here because an ORM round trip costs ~100x a prepared
 * statement (see bench/README.md). WAL lets it read while the ORM writes;
 * it sees committed data only.
 */
export class ReadStore {
  private readonly db: Database.Database;
  private readonly statements = new Map<string, Database.Statement>();
  private readonly dataVersionStatement: Database.Statement;

  constructor(databaseFile: string) {
    if (databaseFile === ':memory:') throw new Error('DATABASE_FILE must be a file; an in-memory database cannot be shared');
    this.db = new Database(databaseFile, { readonly: true, fileMustExist: true });
    this.db.pragma('busy_timeout = 5000');
    this.dataVersionStatement = this.db.prepare('pragma data_version').pluck();
  }

  get<T>(sql: string, ...params: unknown[]): T | undefined {
    return this.prepare(sql).get(...params) as T | undefined;
  }

  all<T>(sql: string, ...params: unknown[]): T[] {
    return this.prepare(sql).all(...params) as T[];
  }

  /** SQLite's `data_version`: changes whenever another connection (another process, the ORM's) commits. */
  dataVersion(): number {
    return this.dataVersionStatement.get() as number;
  }

  close(): void {
    this.db.close();
  }

  private prepare(sql: string): Database.Statement {
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }
}

/** SQLite stores MikroORM datetimes as epoch milliseconds. */
export const toDate = (ms: number | null): Date | null => (ms === null ? null : new Date(ms));
