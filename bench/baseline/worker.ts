import { Worker } from "bullmq";
import { Redis } from "ioredis";
import { z } from "zod";
import { LatencyHistogram } from "../e2e/latency.js";
import {
  BASELINE_QUEUE,
  baselineMessageSchema,
  preciseNow,
  workerCommandSchema,
  type WorkerReport,
} from "./baseline-message.js";

/**
 * The baseline's end: a BullMQ Worker of concurrency 50, its own process. Per window it counts processed jobs and
 * records offered → processed latency in an HDR histogram; the driver asks over node IPC.
 */
const env = z.object({ REDIS_URL: z.string().min(1), KEY_PREFIX: z.string().min(1) }).parse(process.env);

interface WindowState {
  from: number;
  to: number;
  completed: number;
  completedMeasured: number;
  latency: LatencyHistogram;
}
const windows = new Map<number, WindowState>();
const windowOf = (window: number) => {
  let state = windows.get(window);
  if (!state) {
    state = {
      from: Infinity,
      to: Infinity,
      completed: 0,
      completedMeasured: 0,
      latency: new LatencyHistogram(),
    };
    windows.set(window, state);
  }
  return state;
};

const worker = new Worker(
  BASELINE_QUEUE,
  async (job) => {
    const message = baselineMessageSchema.parse(job.data);
    const now = preciseNow();
    const state = windowOf(message.window);
    state.completed += 1;
    if (now >= state.from && now <= state.to) state.completedMeasured += 1;
    if (message.sentAt >= state.from) state.latency.recordMs(now - message.sentAt);
  },
  {
    connection: new Redis(env.REDIS_URL, { maxRetriesPerRequest: null }),
    prefix: `${env.KEY_PREFIX}:bull`,
    concurrency: 50,
  },
);
await worker.waitUntilReady();

process.on("message", (raw) => {
  const command = workerCommandSchema.parse(raw);
  const state = windowOf(command.window);
  if (command.type === "measure") {
    state.from = command.from;
    state.to = command.to;
    return;
  }
  const report: WorkerReport = {
    type: "report",
    window: command.window,
    completed: state.completed,
    completedMeasured: state.completedMeasured,
    latency: state.latency.summary(),
  };
  process.send?.(report);
});
process.stdout.write("ready\n");
