import { build, type Histogram } from "hdr-histogram-js";

/** Percentiles of one latency in milliseconds (null when nothing was observed). */
export interface LatencySummary {
  count: number;
  p50: number | null;
  p90: number | null;
  p99: number | null;
  max: number | null;
}

/** An HDR histogram of latencies recorded in microseconds (3 significant digits, auto-resizing). */
export class LatencyHistogram {
  private readonly histogram: Histogram = build({ numberOfSignificantValueDigits: 3 });

  recordMs(ms: number): void {
    this.histogram.recordValue(Math.max(0, Math.round(ms * 1000)));
  }

  summary(): LatencySummary {
    const count = this.histogram.totalCount;
    const at = (percentile: number) =>
      count === 0 ? null : round(this.histogram.getValueAtPercentile(percentile) / 1000);
    return {
      count,
      p50: at(50),
      p90: at(90),
      p99: at(99),
      max: count === 0 ? null : round(this.histogram.maxValue / 1000),
    };
  }
}

const round = (ms: number) => Math.round(ms * 100) / 100;
