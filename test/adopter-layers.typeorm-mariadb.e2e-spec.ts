import { describeAdopterLayer } from './support/adopter-layer.js';

/** A new service on MariaDB through TypeORM, set up from the guide's section alone (test/support/adopter-layer.ts). */
describeAdopterLayer('typeorm-mariadb');
