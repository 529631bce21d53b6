import { Counter, Gauge, type Registry } from "prom-client";
import { harnessErrorCodeSchema } from "../../libs/contract/harness-wire.js";
import { perRegistry } from "../../libs/metrics/per-registry.js";

export interface GatewayMetrics {
  rejected: Counter<"op" | "code">;
  reservations: Counter<"operation" | "status">;
  eventsSent: Counter<"kind">;
  upgradesRefused: Counter<"reason">;
  sessions: Gauge;
}

/** The requests a peer can get an error answer to, and what a reservation can end as. */
const REQUEST_OPS = ["hello", "turn.send", "turn.stop", "receipt.get"] as const;
const RESERVATION_STATUSES = ["accepted", "duplicate", "conflict", "backpressure", "revoked"] as const;

/** Built once per registry; rejections by op × code and reservations by op × status start at 0. */
export const gatewayMetrics = perRegistry((registry): GatewayMetrics => {
  const metrics = gatewaySeries(registry);
  for (const op of REQUEST_OPS)
    for (const code of harnessErrorCodeSchema.options) metrics.rejected.inc({ op, code }, 0);
  for (const operation of ["turn.send", "turn.stop"])
    for (const status of RESERVATION_STATUSES) metrics.reservations.inc({ operation, status }, 0);
  return metrics;
});

function gatewaySeries(registry: Registry): GatewayMetrics {
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
}
