// A bench's own database: on a PostgreSQL server (DATABASE_URL) a scratch database created for the run and
// dropped after it, so a bench never migrates into or fills a database someone else uses; on PGlite nothing
// to do (it is in memory, or in the bench's own directory).
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export interface ScratchDatabase {
  /** The scratch database's name; undefined on PGlite. */
  name?: string;
  /** Drops it; call it after the bench closed its connections. */
  drop(): Promise<void>;
}

/** Points `config.databaseUrl`, if set, at a new scratch database on the same server. */
export async function useScratchDatabase(
  config: { databaseUrl?: string },
  prefix = 'bench',
): Promise<ScratchDatabase> {
  const server = config.databaseUrl;
  if (!server) return { drop: async () => {} };
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: server });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(server);
  url.pathname = `/${name}`;
  config.databaseUrl = url.toString();
  return {
    name,
    drop: async () => {
      const dropper = new pg.Client({ connectionString: server });
      await dropper.connect();
      await dropper.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await dropper.end();
    },
  };
}
