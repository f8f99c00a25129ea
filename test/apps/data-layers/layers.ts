/** The data layers the contract runs on: each a service writing through its own instance (`-cls`: through `@nestjs-cls/transactional`'s adapter for it). */
export const LAYERS = ['pg', 'drizzle', 'drizzle-cls', 'kysely', 'prisma', 'prisma-cls', 'mikro-orm', 'typeorm'] as const;
export type LayerName = (typeof LAYERS)[number];
