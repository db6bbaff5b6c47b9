// `npm run reseal-secrets`: re-seals every stored secret with the newest key of ENCRYPTION_KEY (see
// src/platform/reseal.ts for the rotation steps). Reads the same configuration as the server.
import { loadConfigOrExit } from './config.ts';
import { MODULES } from './modules.ts';
import { createSecretBox } from './platform/crypto.ts';
import { openDatabase } from './platform/db/index.ts';
import { migrate } from './platform/db/migrate.ts';
import type { ModuleDefinition } from './platform/module.ts';
import { resealSecrets } from './platform/reseal.ts';

async function main() {
  const config = loadConfigOrExit();
  if (config.encryptionKeys.length === 0) {
    process.stderr.write('ENCRYPTION_KEY is not set: there is no key to re-seal with.\n');
    process.exit(1);
  }
  const db = await openDatabase(config);
  try {
    await migrate(db);
    const declarations = (MODULES as readonly ModuleDefinition<string, unknown>[]).flatMap(
      (m) => m.sealed ?? [],
    );
    const ring = { keys: config.encryptionKeys, legacy: config.jwtSecret };
    const reports = await resealSecrets(db, declarations, (purpose) => createSecretBox(ring, purpose));
    for (const report of reports) {
      process.stdout.write(
        `${report.table}.${report.column}: ${report.resealed} re-sealed, ${report.current} already on the newest key\n`,
      );
    }
    process.stdout.write(`All secrets are sealed with key ${config.encryptionKeys[0]!.id}.\n`);
  } finally {
    await db.close();
  }
}

main().catch((error) => {
  process.stderr.write(`Fatal: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
