import type { Provider, Type } from '@nestjs/common';
import { BullmqProcessorCheck } from './bullmq/bullmq-processor.check.js';
import { BULLMQ_PROCESSORS, BullmqTransport } from './bullmq/bullmq.transport.js';
import { golevelupRabbitHandlerKind } from './golevelup-rabbitmq/golevelup-rabbitmq.handler-kind.js';
import { GolevelupRabbitmqPackage } from './golevelup-rabbitmq/golevelup-rabbitmq.package.js';
import { GolevelupRabbitTransport } from './golevelup-rabbitmq/golevelup-rabbitmq.transport.js';
import { GolevelupSubscriptionCheck } from './golevelup-rabbitmq/golevelup-subscription.check.js';
import { GraphqlResolverCheck } from './graphql/graphql-resolver.check.js';
import { GRAPHQL_RESOLVERS } from './graphql/graphql-resolvers.handler-kind.js';
import { GraphqlTransport } from './graphql/graphql.transport.js';
import { KafkaConsumerCheck } from './kafka/kafka-consumer.check.js';
import { KafkaOffsets } from './kafka/kafka-offsets.js';
import { KafkaOffsetsSchemaCheck } from './kafka/kafka-offsets-schema.check.js';
import { KafkaTransport } from './kafka/kafka.transport.js';
import { MESSAGE_TRANSPORTS, type MessageTransport, PROVIDER_HANDLER_KINDS, type TransportDefinition } from './message-transport.js';
import { nestMicroservicesProvider } from './nest-microservices.js';
import { JetStreamConsumerCheck } from './nats-jetstream/jetstream-consumer.check.js';
import { NatsJetStreamTransport } from './nats-jetstream/nats-jetstream.transport.js';
import { NestNatsTransport } from './nest-nats/nest-nats.transport.js';
import { NestRmqTransport } from './nest-rmq/nest-rmq.transport.js';
import { RmqAcknowledgements } from './nest-rmq/rmq-acknowledgements.js';
import { RmqConsumerCheck } from './nest-rmq/rmq-consumer.check.js';
import { NestRpcTransport } from './nest-rpc.transport.js';
import { ProviderCallEntries } from './provider-call.entries.js';
import { SqsConsumerCheck } from './sqs/sqs-consumer.check.js';
import { SqsConsumers } from './sqs/sqs-consumers.js';
import { SQS_HANDLERS, SqsTransport } from './sqs/sqs.transport.js';

/**
 * Every message transport, each once, with its boot checks. The interceptor asks the adapters in
 * this order: the catch-all of Nest's other transports last.
 * @internal
 */
export const TRANSPORTS: readonly TransportDefinition[] = [
  { adapter: NestRmqTransport, providers: [RmqAcknowledgements, RmqConsumerCheck] },
  { adapter: NestNatsTransport, providers: [] },
  { adapter: NatsJetStreamTransport, providers: [JetStreamConsumerCheck] },
  { adapter: KafkaTransport, providers: [KafkaConsumerCheck, KafkaOffsets, KafkaOffsetsSchemaCheck] },
  { adapter: GolevelupRabbitTransport, providers: [GolevelupRabbitmqPackage, GolevelupSubscriptionCheck], providerHandlers: golevelupRabbitHandlerKind },
  { providers: [BullmqTransport, BullmqProcessorCheck], providerHandlers: BULLMQ_PROCESSORS },
  { providers: [SqsConsumers, SqsTransport, SqsConsumerCheck], providerHandlers: SQS_HANDLERS },
  { adapter: GraphqlTransport, providers: [GraphqlResolverCheck], providerHandlers: GRAPHQL_RESOLVERS },
  { adapter: NestRpcTransport, providers: [] },
];

const adapters: Type<MessageTransport>[] = TRANSPORTS.flatMap(({ adapter }) => adapter ?? []);

/**
 * What `IdempotencyModule` provides for its transports: their adapters, their checks, the
 * adapters in order (`MESSAGE_TRANSPORTS`), the kinds of provider handlers (`PROVIDER_HANDLER_KINDS`)
 * and the entries of the calls their frameworks make without Nest's interceptors.
 * @internal
 */
export const TRANSPORT_PROVIDERS: Provider[] = [
  nestMicroservicesProvider,
  ...adapters,
  ...TRANSPORTS.flatMap(({ providers }) => providers),
  { provide: MESSAGE_TRANSPORTS, inject: adapters, useFactory: (...transports: MessageTransport[]) => transports },
  { provide: PROVIDER_HANDLER_KINDS, useValue: TRANSPORTS.flatMap(({ providerHandlers }) => providerHandlers ?? []) },
  ProviderCallEntries,
];
