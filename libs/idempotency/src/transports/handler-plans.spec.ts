import type { ExecutionContext, Type } from '@nestjs/common';
import type { DeliveryCore } from '../delivery/delivery-core.js';
import type { ResolvedHandler } from '../delivery/resolved-handler.js';
import type { DiscoveredHandler, IdempotencyExplorer } from '../discovery/idempotency.explorer.js';
import type { StoredConsumers } from '../discovery/stored-consumers.js';
import { IdempotencyUnsupportedHandlerError } from '../errors/idempotency.errors.js';
import type { ResolvedIdempotencyOptions } from '../idempotency.options.js';
import { HandlerPlans } from './handler-plans.js';
import type { MessageTransport, ProviderHandlerKind } from './message-transport.js';

class Base {
  grant(): void {}
}
class First extends Base {}
class Second extends Base {}
class Events {
  credited(): void {}
}

const handler = (consumer: string) => ({ name: consumer, consumer, required: true, scope: false, clientKey: false }) as unknown as ResolvedHandler;

function discovered(target: Type, methodName: string, consumer: string, patterns?: DiscoveredHandler['patterns']): DiscoveredHandler {
  return { moduleName: 'AppModule', handler: handler(consumer), target, methodName, patterns, guards: [], shared: false, fanOut: () => 0 };
}

function plansOf(handlers: DiscoveredHandler[], formerNames: Record<string, string> = {}): HandlerPlans {
  const explorer = { discovered: () => handlers } as unknown as IdempotencyExplorer;
  const core = { plan: (resolved: ResolvedHandler) => ({ handler: resolved, formerConsumer: undefined }) } as unknown as DeliveryCore;
  const options = { scope: {}, replay: { maxBodyBytes: 1, excludedHeaders: new Set() } } as unknown as ResolvedIdempotencyOptions;
  const rmq = { name: 'rabbitmq', messageIdSource: 'the AMQP messageId property', read: () => undefined } as MessageTransport;
  const graphql = { name: 'graphql', messageIdSource: undefined, read: () => undefined } as MessageTransport;
  const kinds = [{ transport: 'graphql', contract: () => undefined }] as ProviderHandlerKind[];
  const consumers = { formerNameOf: (consumer: string) => formerNames[consumer] } as unknown as StoredConsumers;
  return new HandlerPlans(explorer, core, options, [rmq, graphql], kinds, consumers);
}

const context = (target: Type, method: object) => ({ getClass: () => target, getHandler: () => method }) as unknown as ExecutionContext;

describe('HandlerPlans, every handler planned at start-up, found by the method Nest calls', () => {
  const grant = Base.prototype.grant;

  it('has a plan for each class that inherits a method, and refuses a method it found no handler of', () => {
    const plans = plansOf([discovered(First, 'grant', 'POST /first'), discovered(Second, 'grant', 'POST /second')]);
    expect(plans.http(context(First, grant)).handler.consumer).toBe('POST /first');
    expect(plans.http(context(Second, grant)).handler.consumer).toBe('POST /second');
    expect(() => plans.http(context(First, () => undefined))).toThrow(IdempotencyUnsupportedHandlerError);
    expect(() => plans.message(context(First, grant))).toThrow(IdempotencyUnsupportedHandlerError);
  });

  it("finds a bound copy of a method (golevelup's) by its class and name", () => {
    const plans = plansOf([discovered(First, 'grant', 'POST /first')]);
    expect(plans.http(context(First, grant.bind(new First()))).handler.consumer).toBe('POST /first');
  });

  it("reads a pattern's deliveries through every adapter but the provider frameworks'", () => {
    const plans = plansOf([discovered(Events, 'credited', 'credited', { patterns: ['credited'], isEvent: true, transport: undefined })]);
    expect(plans.message(context(Events, Events.prototype.credited)).transports.map(({ name }) => name)).toEqual(['rabbitmq']);
  });

  it("holds each handler's former name from start-up on", () => {
    const plans = plansOf([discovered(First, 'grant', 'POST /first')], { 'POST /first': 'First.grant' });
    expect(plans.http(context(First, grant)).formerConsumer).toBeUndefined();
    plans.onApplicationBootstrap();
    expect(plans.http(context(First, grant)).formerConsumer).toBe('First.grant');
  });
});
