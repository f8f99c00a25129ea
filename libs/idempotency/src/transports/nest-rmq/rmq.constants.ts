/** Nest's `Transport.RMQ`. */
export const RMQ_TRANSPORT = 5;

/** The transport's name in metrics, traces and logs. */
export const RMQ_TRANSPORT_NAME = 'rabbitmq';
