import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import type { PlaybackKind, PlaybackReason, PlaybackState } from "../../libs/contract/os-playback.js";
import { perRegistry } from "../../libs/metrics/per-registry.js";

/** Outbox transitions, suppressions, Lamp events ignored, and the playback queue's job counts (read at scrape). */
export class TtsMetrics {
  static readonly of = perRegistry((registry) => new TtsMetrics(registry));

  readonly outboxTransitions: Counter<"state">;
  readonly playbackTransitions: Counter<"kind" | "state">;
  readonly suppressions: Counter<"reason">;
  readonly ignoredLampEvents: Counter<"reason">;
  readonly playbackStarts: Counter<"kind">;
  readonly ackWait: Histogram<"outcome">;
  readonly lampWakes: Counter<"outcome">;
  private queueCounts: (() => Promise<Record<string, number>>) | undefined;

  private constructor(registry: Registry) {
    this.outboxTransitions = new Counter({
      name: "tts_outbox_transitions_total",
      help: "Outbox entries entering each state (queued and suppressed count entries created).",
      labelNames: ["state"],
      registers: [registry],
    });
    this.playbackTransitions = new Counter({
      name: "tts_playback_transitions_total",
      help: "Playbacks (answer, notice, repeat) entering each state.",
      labelNames: ["kind", "state"],
      registers: [registry],
    });
    this.suppressions = new Counter({
      name: "tts_suppressions_total",
      help: "Results or playbacks not spoken, by reason.",
      labelNames: ["reason"],
      registers: [registry],
    });
    this.ignoredLampEvents = new Counter({
      name: "tts_lamp_events_ignored_total",
      help: "Lamp events that changed nothing: unknown playback, stale ack, repeat of an unknown result.",
      labelNames: ["reason"],
      registers: [registry],
    });
    this.playbackStarts = new Counter({
      name: "tts_playback_starts_sent_total",
      help: "playback.start commands written to a device-gateway's delivery stream.",
      labelNames: ["kind"],
      registers: [registry],
    });
    this.ackWait = new Histogram({
      name: "tts_playback_ack_wait_seconds",
      help: "Time from playback.start to the Lamp's first ack (or the ack timeout).",
      labelNames: ["outcome"],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers: [registry],
    });
    this.lampWakes = new Counter({
      name: "tts_playback_lamp_wakes_total",
      help: "Playbacks waiting for the Lamp woken by its lamp.connected: promoted, not_delayed (already due), missing (no job).",
      labelNames: ["outcome"],
      registers: [registry],
    });
    const queueCounts = () => this.queueCounts?.();
    new Gauge({
      name: "tts_playback_queue_jobs",
      help: "Jobs in the lamp-playback BullMQ queue by state.",
      labelNames: ["state"],
      registers: [registry],
      async collect() {
        for (const [state, count] of Object.entries((await queueCounts()) ?? {})) this.set({ state }, count);
      },
    });
  }

  watchQueue(counts: () => Promise<Record<string, number>>): void {
    this.queueCounts = counts;
  }

  /** A playback entered `state`; an answer's transition is also its outbox entry's. */
  recordPlayback(kind: PlaybackKind, state: PlaybackState, reason?: PlaybackReason): void {
    this.playbackTransitions.inc({ kind, state });
    if (kind === "answer") this.recordOutbox(state, reason);
    else if (state === "suppressed" && reason) this.suppressions.inc({ reason });
  }

  recordOutbox(state: PlaybackState, reason?: PlaybackReason): void {
    this.outboxTransitions.inc({ state });
    if (state === "suppressed" && reason) this.suppressions.inc({ reason });
  }
}
