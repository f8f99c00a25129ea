import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { WorkerAppModule } from './worker-app.module.js';

/** What the guide once advised for a script: an application context of the worker's whole AppModule. */
const context = await NestFactory.createApplicationContext(WorkerAppModule, { logger: ['warn', 'error'] });
context.enableShutdownHooks();
console.log('context ready');
