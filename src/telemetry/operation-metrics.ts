/**
 * The metrics of the MCP semantic conventions (gen-ai/mcp.md, status Development): the duration of each
 * request taskgate receives (`mcp.server.operation.duration`, as observed on the receiver) or sends
 * (`mcp.client.operation.duration`, on the sender), and of each 2025 session on its fronts
 * (`mcp.server.session.duration`) and to its upstreams (`mcp.client.session.duration`). Histograms in
 * seconds with the buckets the conventions give. Only the attributes the conventions list for metrics are
 * kept: no request id, no session id, no task id, and `mcp.resource.uri` (opt-in) not at all.
 */
import type { Attributes, AttributeValue, Histogram, Meter } from '@opentelemetry/api';

/** The conventions' ExplicitBucketBoundaries for all four histograms, in seconds. */
export const MCP_BUCKETS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300];

export type Role = 'server' | 'client';

const OPERATION_ATTRIBUTES = [
  'mcp.method.name',
  'error.type',
  'gen_ai.prompt.name',
  'gen_ai.tool.name',
  'rpc.response.status_code',
  'gen_ai.operation.name',
  'jsonrpc.protocol.version',
  'mcp.protocol.version',
  'network.protocol.name',
  'network.protocol.version',
  'network.transport',
];
const ADDRESS_ATTRIBUTES = ['server.address', 'server.port'];
const SESSION_ATTRIBUTES = [
  'error.type',
  'jsonrpc.protocol.version',
  'mcp.protocol.version',
  'network.protocol.name',
  'network.protocol.version',
  'network.transport',
];

export class OperationMetrics {
  private readonly operations: Record<Role, Histogram>;
  private readonly sessions: Record<Role, Histogram>;

  constructor(meter: Meter) {
    const histogram = (name: string, description: string): Histogram =>
      meter.createHistogram(name, {
        unit: 's',
        description,
        advice: { explicitBucketBoundaries: MCP_BUCKETS },
      });
    this.operations = {
      server: histogram(
        'mcp.server.operation.duration',
        'MCP request or notification duration as observed on the receiver from the time it was received until the result or ack is sent.',
      ),
      client: histogram(
        'mcp.client.operation.duration',
        'The duration of the MCP request or notification as observed on the sender from the time it was sent until the response or ack is received.',
      ),
    };
    this.sessions = {
      server: histogram(
        'mcp.server.session.duration',
        'The duration of the MCP session as observed on the MCP server.',
      ),
      client: histogram(
        'mcp.client.session.duration',
        'The duration of the MCP session as observed on the MCP client.',
      ),
    };
  }

  /** One request's time; `attributes` those of its span, request and outcome together. */
  operation(role: Role, seconds: number, attributes: Attributes): void {
    this.operations[role].record(seconds, picked(attributes, role, OPERATION_ATTRIBUTES));
  }

  session(role: Role, seconds: number, attributes: Attributes): void {
    this.sessions[role].record(seconds, picked(attributes, role, SESSION_ATTRIBUTES));
  }
}

function picked(attributes: Attributes, role: Role, names: string[]): Attributes {
  const kept: Attributes = {};
  const keep = (name: string): void => {
    const value: AttributeValue | undefined = attributes[name];
    if (value !== undefined) kept[name] = value;
  };
  for (const name of names) keep(name);
  // server.address and server.port are the client's: the server it observes.
  if (role === 'client') for (const name of ADDRESS_ATTRIBUTES) keep(name);
  return kept;
}
