import { describeAdopterLayer } from './support/adopter-layer.js';

/** A new service on MariaDB through MikroORM (`@mikro-orm/mariadb`), set up from the guide's section alone (test/support/adopter-layer.ts). */
describeAdopterLayer('mikro-orm-mariadb');
