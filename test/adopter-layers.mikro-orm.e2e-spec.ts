import { describeAdopterLayer } from './support/adopter-layer.js';

/** A new service on MikroORM, set up from the guide's section alone (test/support/adopter-layer.ts). */
describeAdopterLayer('mikro-orm');
