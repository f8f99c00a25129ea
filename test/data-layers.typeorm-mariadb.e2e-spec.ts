import { describeMariaDbLayers } from './support/mariadb-layer-suite.js';

/** `dataLayerContract()` on TypeORM's `mariadb` data source, a suite of its own so that CI's pass on TypeORM 0.3 runs it alone. */
describeMariaDbLayers(['typeorm-mariadb']);
