// Writes each of the library's migrations, for the default table, to sql/<timestamp>-<name>.sql:
// the files the package ships for migration tools other than TypeORM's. It reads schemaSql() from
// the built library, so build it first:
//
//   npm run build --workspace nestjs-idempotent-consumer && npm run sql:write --workspace nestjs-idempotent-consumer
//
// Only a new migration's file is written. A file already there was released and is never
// rewritten: if it differs from what its migration gives now, the script names it and fails.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath, URL } from 'node:url';

const built = new URL('../dist/migrations/schema-sql.js', import.meta.url);
if (!existsSync(built)) {
  console.error(`${fileURLToPath(built)} is missing: build the library first.`);
  process.exit(1);
}
const { schemaSql } = await import(built.href);
const folder = new URL('../sql/', import.meta.url);
mkdirSync(folder, { recursive: true });

const changed = [];
for (const { name, sql } of await schemaSql()) {
  const file = new URL(`${name}.sql`, folder);
  if (!existsSync(file)) {
    writeFileSync(file, sql);
    console.log(`wrote sql/${name}.sql`);
  } else if (readFileSync(file, 'utf8') !== sql) {
    changed.push(`sql/${name}.sql`);
  }
}
if (changed.length > 0) {
  console.error(
    `${changed.join(', ')}: released, so left as they are, but their migrations now give other SQL. ` +
      'A released migration never changes: restore it, and bring the schema forward with a new migration.',
  );
  process.exit(1);
}
