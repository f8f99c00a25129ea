import { describeAdopterLayer } from './support/adopter-layer.js';

/** A new service on Prisma, set up from the guide's section alone (test/support/adopter-layer.ts). */
describeAdopterLayer('prisma');
