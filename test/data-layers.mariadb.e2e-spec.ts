import { MARIADB_LAYERS } from './apps/data-layers/layers.js';
import { describeMariaDbLayers } from './support/mariadb-layer-suite.js';

/** `dataLayerContract()` on the data layers on MariaDB that never call TypeORM (TypeORM's: data-layers.typeorm-mariadb). */
describeMariaDbLayers(MARIADB_LAYERS.filter((layer) => layer !== 'typeorm-mariadb'));
