/** The metadata key under which @IdempotentHandler() stores its options. */
export const HANDLER_OPTIONS_METADATA = 'IDEMPOTENCY:HANDLER_OPTIONS';

/** The sender of handlers that name none. */
export const DEFAULT_SENDER = 'default';

/**
 * Nest metadata the module reads. Their values are Nest's own (`RouteParamtypes.RESPONSE` and
 * `.NEXT` of @nestjs/common; the pattern keys of @nestjs/microservices, which the module does not
 * import unless the application uses it); a unit spec checks them against Nest.
 */
export const RESPONSE_PARAMTYPE = 1;
export const NEXT_PARAMTYPE = 2;
export const PATTERN_METADATA = 'microservices:pattern';
export const PATTERN_HANDLER_METADATA = 'microservices:handler_type';
export const TRANSPORT_METADATA = 'microservices:transport';
