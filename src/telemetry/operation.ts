/**
 * One request in flight that taskgate received or sent: its span, and its time for the conventions'
 * operation histogram (operation-metrics.ts). Whatever ends it ends both, with the same outcome.
 */
import { SpanStatusCode, type Attributes, type Span } from '@opentelemetry/api';
import type { JsonObject } from '../protocol/messages.js';
import { responseOutcome, toolResultOf } from './attributes.js';
import type { OperationMetrics, Role } from './operation-metrics.js';

export class Operation {
  private readonly started = performance.now();

  constructor(
    readonly span: Span,
    private readonly role: Role,
    readonly attributes: Attributes,
    private readonly metrics: OperationMetrics | undefined,
    /** Records the tool's result on the span (telemetry.toolContent, a tools/call). */
    private readonly recordsResult = false,
  ) {}

  /** Ends with what the response says. */
  answered(response: JsonObject): void {
    const outcome = responseOutcome(response);
    this.span.setAttributes(outcome.attributes);
    if (this.recordsResult) this.span.setAttributes(toolResultOf(response));
    if (outcome.error !== undefined)
      this.span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.error });
    this.span.end();
    this.record(outcome.attributes);
  }

  /** Ends with no response: `errorType` says why (connection_closed, cancelled, _OTHER). */
  failed(errorType: string, message: string): void {
    this.span.setAttribute('error.type', errorType);
    this.span.setStatus({ code: SpanStatusCode.ERROR, message });
    this.span.end();
    this.record({ 'error.type': errorType });
  }

  /** Ends untold (pushed out of a full table): there is no outcome to count. */
  dropped(): void {
    this.span.end();
  }

  private record(outcome: Attributes): void {
    this.metrics?.operation(this.role, (performance.now() - this.started) / 1000, {
      ...this.attributes,
      ...outcome,
    });
  }
}
