import { Counter, Gauge, type Registry } from "prom-client";
import { perRegistry } from "../../libs/metrics/per-registry.js";

const LAMP_FRAME_TYPES = ["voice.request", "voice.cancel", "playback.ack", "playback.repeat"] as const;

/** The device-gateway's series, built once per registry; each Lamp frame type's ok/error counts start at 0. */
export const deviceGatewayMetrics = perRegistry((registry) => {
  const metrics = gatewaySeries(registry);
  for (const type of LAMP_FRAME_TYPES)
    for (const result of ["ok", "error"]) metrics.frames.inc({ type, result }, 0);
  metrics.socketsRefused.inc({ reason: "too_many_sockets" }, 0);
  return metrics;
});

const gatewaySeries = (registry: Registry) => ({
  frames: new Counter({
    name: "os_lamp_frames_total",
    help: "Frames received from Lamps, by type and result",
    labelNames: ["type", "result"],
    registers: [registry],
  }),
  sockets: new Gauge({ name: "os_lamp_sockets", help: "Open Lamp WebSockets", registers: [registry] }),
  socketsRefused: new Counter({
    name: "os_lamp_sockets_refused_total",
    help: "Lamp WebSockets closed right after the upgrade, by reason (too_many_sockets: over the per-device cap)",
    labelNames: ["reason"],
    registers: [registry],
  }),
  duplicates: new Counter({
    name: "os_lamp_duplicate_deliveries_total",
    help: "playback.start delivery entries refused because this instance already delivered that playbackId",
    registers: [registry],
  }),
  runUpdates: new Counter({
    name: "os_lamp_run_updates_sent_total",
    help: "run.update frames written to Lamp sockets (live and replayed)",
    registers: [registry],
  }),
});
export type DeviceGatewayMetrics = ReturnType<typeof deviceGatewayMetrics>;
