/*
 * The TypeORM types the public API names (`IdempotencyContext.manager`, the migrations), in one
 * place, shipped as written (the build copies this file: tsc would drop the directive below).
 * TypeORM is an optional peer: a service on another data layer has no `typeorm` to resolve, and
 * its `tsc` with `skipLibCheck: false` checks these declarations all the same. There, these types
 * are `any` instead of error TS2307; where TypeORM is installed, they are its own.
 */
// eslint-disable-next-line @typescript-eslint/ban-ts-comment -- a @ts-expect-error would fail where TypeORM is installed.
// @ts-ignore
export type { EntityManager, MigrationInterface, QueryRunner } from 'typeorm';
