import 'reflect-metadata';
import { RESPONSE_PASSTHROUGH_METADATA, ROUTE_ARGS_METADATA, SSE_METADATA } from '@nestjs/common/constants.js';
import { RouteParamtypes } from '@nestjs/common/enums/route-paramtypes.enum.js';
import * as microservicesConstants from '@nestjs/microservices/constants.js';
import * as metadata from './idempotency-metadata.constants.js';

/** Nest's metadata that the module reads without importing it, checked against the installed Nest. */
describe("Nest's metadata keys and values", () => {
  it("reads Nest's route, response and pattern metadata under the keys and values the module uses", () => {
    expect([RouteParamtypes.RESPONSE, RouteParamtypes.NEXT]).toEqual([metadata.RESPONSE_PARAMTYPE, metadata.NEXT_PARAMTYPE]);
    expect([ROUTE_ARGS_METADATA, RESPONSE_PASSTHROUGH_METADATA, SSE_METADATA]).toEqual(['__routeArguments__', '__responsePassthrough__', '__sse__']);
    expect(microservicesConstants.PATTERN_METADATA).toBe(metadata.PATTERN_METADATA);
    expect(microservicesConstants.PATTERN_HANDLER_METADATA).toBe(metadata.PATTERN_HANDLER_METADATA);
    expect(microservicesConstants.TRANSPORT_METADATA).toBe(metadata.TRANSPORT_METADATA);
  });
});
