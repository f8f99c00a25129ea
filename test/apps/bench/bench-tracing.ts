import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';

/** Spans exported (to nothing) so far; undefined until `registerBenchTracing()` ran. */
let exported: number | undefined;

/** An exporter that drops the spans it is given, counting them. */
class DiscardingExporter implements SpanExporter {
  export(spans: ReadableSpan[], done: Parameters<SpanExporter['export']>[1]): void {
    exported = (exported ?? 0) + spans.length;
    done({ code: 0 }); // ExportResultCode.SUCCESS
  }

  shutdown(): Promise<void> {
    return Promise.resolve();
  }
}

/**
 * Registers an OpenTelemetry SDK tracer provider in this process, as an application's tracing
 * set-up does, with a `SimpleSpanProcessor` (each span exported as it ends) whose exporter drops
 * the spans: the module's spans are really created, recorded and ended, at no backend's cost. The
 * SDK is loaded only here, so the processes without tracing do not load it at all.
 */
export async function registerBenchTracing(): Promise<void> {
  const { trace } = await import('@opentelemetry/api');
  const { BasicTracerProvider, SimpleSpanProcessor } = await import('@opentelemetry/sdk-trace-base');
  exported = 0;
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(new DiscardingExporter())] }));
}

/** How many spans this process has exported; undefined where `registerBenchTracing()` did not run. */
export function exportedSpans(): number | undefined {
  return exported;
}
