import { describeAdopterLayer } from './support/adopter-layer.js';

/** A new service on plain pg, set up from the guide's section alone (test/support/adopter-layer.ts). */
describeAdopterLayer('pg');
