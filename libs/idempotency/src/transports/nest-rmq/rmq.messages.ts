/** The message texts of the RabbitMQ transport. */
export const rmqMessages = {
  autoAcknowledgedQueue: (queue: string, handler: string) =>
    `The RabbitMQ consumer of queue '${queue}' acknowledges messages on delivery (noAck: true, Nest's default), but ` +
    `${handler} is idempotent and the module acknowledges each message itself once it committed. Set noAck: false ` +
    'in the microservice options.',
};
