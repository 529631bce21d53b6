import { Counter } from "prom-client";
import { describe, expect, it } from "vitest";
import { ProcessMetrics } from "./process-metrics.js";

describe("ProcessMetrics", () => {
  it("labels every series with its service and serves a family defined by two services once", async () => {
    const metrics = new ProcessMetrics("all-in-one");
    for (const service of ["router", "run-resolver"]) {
      const counter = new Counter({
        name: "os_rejected_events_total",
        help: "rejected",
        labelNames: ["reason"],
        registers: [metrics.forService(service)],
      });
      counter.inc({ reason: "UNKNOWN_MEMBER" }, 0);
    }
    const text = await metrics.metrics();
    expect(text.match(/^# HELP os_rejected_events_total /gm)).toHaveLength(1);
    expect(text.match(/^# TYPE os_rejected_events_total /gm)).toHaveLength(1);
    expect(text).toContain('os_rejected_events_total{reason="UNKNOWN_MEMBER",service="router"} 0');
    expect(text).toContain('os_rejected_events_total{reason="UNKNOWN_MEMBER",service="run-resolver"} 0');
    expect(text).toMatch(/^process_resident_memory_bytes\{service="all-in-one"\} \d+/m);
  });
});
