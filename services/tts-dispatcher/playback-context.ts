import type { Logger } from "../../libs/logging/logger.js";
import type { PlaybackQueue } from "./playback/playback-queue.js";
import type { OsStoreReader } from "./store/os-store-reader.js";
import type { PlaybackStore } from "./store/playback-store.js";
import type { TtsMetrics } from "./tts-metrics.js";

/** What every handler that creates playbacks works with: the OS store, the playback store and queue, speech limits. */
export interface PlaybackContext {
  reader: OsStoreReader;
  store: PlaybackStore;
  queue: PlaybackQueue;
  metrics: TtsMetrics;
  log: Logger;
  speechMaxChars: number;
}
