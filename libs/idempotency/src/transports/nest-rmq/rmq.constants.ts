/** Nest's `Transport.RMQ`. */
export const RMQ_TRANSPORT = 5;
