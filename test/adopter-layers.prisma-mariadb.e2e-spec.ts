import { describeAdopterLayer } from './support/adopter-layer.js';

/** A new service on MariaDB through Prisma (`@prisma/adapter-mariadb`), set up from the guide's section alone (test/support/adopter-layer.ts). */
describeAdopterLayer('prisma-mariadb');
