/** The data layers the contract runs on: each a service writing through its own instance (`-cls`: through `@nestjs-cls/transactional`'s adapter for it). */
export const LAYERS = ['pg', 'drizzle', 'drizzle-cls', 'kysely', 'prisma', 'prisma-cls', 'mikro-orm', 'typeorm'] as const;
export type LayerName = (typeof LAYERS)[number];

/**
 * The data layers on MariaDB the contract runs on (test/data-layers.mariadb and .typeorm-mariadb): a mysql2
 * pool (and Drizzle, Kysely on it), a pool of the mariadb connector (and Prisma on it), MikroORM's
 * `MariaDbDriver`, and TypeORM's `mariadb` data source.
 */
export const MARIADB_LAYERS = ['mysql2', 'drizzle-mysql2', 'kysely-mysql', 'mariadb', 'prisma-mariadb', 'mikro-orm-mariadb', 'typeorm-mariadb'] as const;
export type MariaDbLayerName = (typeof MARIADB_LAYERS)[number];
