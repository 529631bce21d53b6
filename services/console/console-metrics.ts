import { Counter, type Registry } from "prom-client";
import { perRegistry } from "../../libs/metrics/per-registry.js";

/** The console's series, built once per registry. */
export const consoleMetrics = perRegistry((registry: Registry) => ({
  refusals: new Counter({
    name: "os_console_refusals_total",
    help: "Console requests refused, by reason (the operator gate's code, or a CSRF check)",
    labelNames: ["reason"],
    registers: [registry],
  }),
  feedsEnded: new Counter({
    name: "os_console_live_feeds_ended_total",
    help: "Live feeds the console ended because their credential expired or was revoked",
    labelNames: ["reason"],
    registers: [registry],
  }),
}));
export type ConsoleMetrics = ReturnType<typeof consoleMetrics>;
