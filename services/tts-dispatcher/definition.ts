import { STREAM_CATALOG } from "../../libs/contract/catalog.js";
import { parseConfig } from "../../libs/config/load-config.js";
import { errorMessage } from "../../libs/errors/error-message.js";
import { CompletionMarks } from "../../libs/os-store/completion-marks.js";
import { defineService } from "../../libs/service/service-context.js";
import { CrashPoint } from "../../libs/test-support/crash-point.js";
import { startServiceConsumer } from "../../libs/service/service-consumer.js";
import { ttsDispatcherEnvSchema } from "./config.js";
import { LampEventHandler } from "./lamp-event-handler.js";
import { PlaybackQueue } from "./playback/playback-queue.js";
import { PlaybackWorker } from "./playback/playback-worker.js";
import { ResultDispatcher } from "./result-dispatcher.js";
import { OsStoreReader } from "./store/os-store-reader.js";
import { PlaybackStore } from "./store/playback-store.js";
import { TtsMetrics } from "./tts-metrics.js";

/** os.resolved → outbox → BullMQ lamp-playback → the Lamp, plus the Lamp's acks and "say that again". */
export const ttsDispatcherService = defineService({
  name: "tts-dispatcher",
  config: (env) => parseConfig(ttsDispatcherEnvSchema, env),
  async start(ctx, config) {
    const metrics = TtsMetrics.of(ctx.metrics);
    const reader = new OsStoreReader(ctx.connections.command, ctx.keys);
    const store = new PlaybackStore(ctx.connections.command, ctx.keys, config.RESULT_RETENTION_MS);
    const crashPoint = new CrashPoint(config, ctx.connections.command, ctx.keys);
    const prefix = ctx.keys.bullPrefix;
    const queue = new PlaybackQueue({
      connection: ctx.connections.blocking("lamp-playback/queue"),
      prefix,
      maxAttempts: config.PLAYBACK_MAX_ATTEMPTS,
      retryDelayMs: config.PLAYBACK_RETRY_DELAY_MS,
      retentionMs: config.RESULT_RETENTION_MS,
    });
    queue.queue.on("error", (error) => ctx.log.warn({ err: errorMessage(error) }, "playback queue error"));
    metrics.watchQueue(() => queue.counts());
    metrics.watchCompletions(new CompletionMarks(ctx.connections.command, ctx.keys));
    const speech = { speechMaxChars: config.SPEECH_MAX_CHARS };
    const dispatcher = new ResultDispatcher({
      reader,
      store,
      queue,
      metrics,
      log: ctx.log,
      ...speech,
      failureNoticeText: config.FAILURE_NOTICE_TEXT,
      crashPoint,
    });
    const lampEvents = new LampEventHandler({ reader, store, queue, metrics, log: ctx.log, ...speech });
    const worker = new PlaybackWorker({
      connection: ctx.connections.blocking("lamp-playback/worker"),
      prefix,
      redis: ctx.connections.command,
      keys: ctx.keys,
      store,
      metrics,
      log: ctx.log,
      concurrency: config.PLAYBACK_WORKER_CONCURRENCY,
      ackTimeoutMs: config.PLAYBACK_ACK_TIMEOUT_MS,
      offlineRecheckMs: config.PLAYBACK_OFFLINE_RECHECK_MS,
      repeatWaitMs: config.PLAYBACK_REPEAT_WAIT_MS,
      queue,
      lockDurationMs: config.PLAYBACK_LOCK_DURATION_MS,
      stalledIntervalMs: config.PLAYBACK_STALLED_INTERVAL_MS,
      crashPoint,
    });
    const consumers = [
      await startServiceConsumer(ctx, {
        stream: STREAM_CATALOG.osResolved,
        group: STREAM_CATALOG.osResolved.consumers.ttsDispatcher.group,
        handle: (entry) => dispatcher.dispatch(entry.payload),
        ownerOf: (payload) => payload.deviceId,
      }),
      await startServiceConsumer(ctx, {
        stream: STREAM_CATALOG.lampEvents,
        group: STREAM_CATALOG.lampEvents.consumers.ttsDispatcher.group,
        handle: (entry) => lampEvents.handle(entry.payload),
        ownerOf: (payload) => payload.deviceId,
      }),
    ];
    worker.start();
    ctx.health.addLiveness("lamp-playback/worker", () => worker.isRunning());
    return {
      async stop() {
        for (const consumer of consumers) await consumer.stop();
        await worker.stop();
        await queue.close();
      },
    };
  },
});
