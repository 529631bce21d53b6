import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import {
  SUPPRESSION_REASONS,
  playbackKindSchema,
  playbackStateSchema,
  type PlaybackKind,
  type PlaybackReason,
  type PlaybackState,
} from "../../libs/contract/os-playback.js";
import type { CompletionMarks } from "../../libs/os-store/completion-marks.js";
import { perRegistry } from "../../libs/metrics/per-registry.js";

/**
 * Outbox transitions, suppressions, Lamp events ignored, the playback queue's job counts (read at scrape), and the
 * end-to-end latency from the engine's completion record to `playback.start`. Every series with known label values
 * exists at 0 from start, so `increase()` sees the first event and no panel is blank before it.
 */
export class TtsMetrics {
  static readonly of = perRegistry((registry) => new TtsMetrics(registry));

  readonly outboxTransitions: Counter<"state">;
  readonly playbackTransitions: Counter<"kind" | "state">;
  readonly suppressions: Counter<"reason">;
  readonly ignoredLampEvents: Counter<"reason">;
  readonly playbackStarts: Counter<"kind">;
  readonly ackWait: Histogram<"outcome">;
  readonly lampWakes: Counter<"outcome">;
  readonly completionToPlaybackStart: Histogram<"kind">;
  readonly unmeasuredLatency: Counter<"reason">;
  private completions: CompletionMarks | undefined;
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
    this.completionToPlaybackStart = new Histogram({
      name: "lampline_completion_to_playback_start_seconds",
      help: "End to end: from the engine's completion record (runner receipt time) to the first playback.start of its answer or failure notice.",
      labelNames: ["kind"],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300],
      registers: [registry],
    });
    this.unmeasuredLatency = new Counter({
      name: "lampline_completion_latency_unmeasured_total",
      help: "playback.start of an answer or notice whose completion mark was absent (expired, other Redis) or unreadable.",
      labelNames: ["reason"],
      registers: [registry],
    });
    this.initialise();
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

  private initialise(): void {
    for (const state of playbackStateSchema.options) {
      this.outboxTransitions.inc({ state }, 0);
      for (const kind of playbackKindSchema.options) this.playbackTransitions.inc({ kind, state }, 0);
    }
    for (const kind of playbackKindSchema.options) this.playbackStarts.inc({ kind }, 0);
    for (const reason of SUPPRESSION_REASONS) this.suppressions.inc({ reason }, 0);
    for (const kind of ["answer", "notice"]) this.completionToPlaybackStart.zero({ kind });
    for (const reason of ["absent", "unreadable"]) this.unmeasuredLatency.inc({ reason }, 0);
    for (const outcome of ["played", "uncertain", "failed", "timeout"]) this.ackWait.zero({ outcome });
  }

  watchCompletions(marks: CompletionMarks): void {
    this.completions = marks;
  }

  /**
   * A playback.start was written. For an answer or notice, the end-to-end latency is observed from its result's
   * completion mark, off the send path: a measurement never delays or fails a playback.
   */
  recordPlaybackStart(playback: { kind: PlaybackKind; resultKey: string }, sentAt: number): void {
    this.playbackStarts.inc({ kind: playback.kind });
    if (playback.kind === "repeat" || this.completions === undefined) return;
    const { kind } = playback;
    this.completions.takeCompletedAt(playback.resultKey).then(
      (completedAt) => {
        if (completedAt === undefined) this.unmeasuredLatency.inc({ reason: "absent" });
        else this.completionToPlaybackStart.observe({ kind }, Math.max(0, sentAt - completedAt) / 1000);
      },
      () => this.unmeasuredLatency.inc({ reason: "unreadable" }),
    );
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
