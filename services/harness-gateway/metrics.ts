import { Counter, Gauge } from "prom-client";
import { perRegistry } from "../../libs/metrics/per-registry.js";

export interface GatewayMetrics {
  rejected: Counter<"op" | "code">;
  reservations: Counter<"operation" | "status">;
  eventsSent: Counter<"kind">;
  upgradesRefused: Counter<"reason">;
  sessions: Gauge;
}

export const gatewayMetrics = perRegistry((registry): GatewayMetrics => {
  const registers = [registry];
  return {
    rejected: new Counter({
      name: "harness_gateway_rejected_requests_total",
      help: "Peer requests answered with an error, by reply type and error code.",
      labelNames: ["op", "code"],
      registers,
    }),
    reservations: new Counter({
      name: "harness_gateway_reservations_total",
      help: "Reservation attempts by operation and status (accepted, duplicate, conflict, backpressure, revoked).",
      labelNames: ["operation", "status"],
      registers,
    }),
    eventsSent: new Counter({
      name: "harness_gateway_events_sent_total",
      help: "Frames pushed to peers outside request/response: events by wire kind, and resync.",
      labelNames: ["kind"],
      registers,
    }),
    upgradesRefused: new Counter({
      name: "harness_gateway_upgrades_refused_total",
      help: "WebSocket upgrades refused before the handshake, by reason.",
      labelNames: ["reason"],
      registers,
    }),
    sessions: new Gauge({
      name: "harness_gateway_sessions",
      help: "Open Harness WebSocket sessions in this process.",
      registers,
    }),
  };
});
