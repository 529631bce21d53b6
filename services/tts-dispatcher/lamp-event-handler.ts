import type { LampEvent } from "../../libs/contract/lamp-delivery.js";
import type { PlaybackReason } from "../../libs/contract/os-playback.js";
import { newestMember } from "./delivery/decide-delivery.js";
import { renderSpeech } from "./speech/render-speech.js";
import type { PlaybackContext } from "./playback-context.js";

type AckEvent = Extract<LampEvent, { kind: "playback.ack" }>;
type RepeatEvent = Extract<LampEvent, { kind: "playback.repeat" }>;

export type LampEventHandlerOptions = PlaybackContext;

/** What the Lamp says about playback, forwarded by the device-gateway: acks, and "say that again". */
export class LampEventHandler {
  constructor(private readonly options: LampEventHandlerOptions) {}

  handle(event: LampEvent): Promise<void> {
    switch (event.kind) {
      case "playback.ack":
        return this.applyAck(event);
      case "playback.repeat":
        return this.repeat(event);
      case "lamp.connected":
        return Promise.resolve();
    }
  }

  private async applyAck(event: AckEvent): Promise<void> {
    const { store, metrics, log } = this.options;
    const step = await store.step(
      event.deviceId,
      event.playbackId,
      { op: "ack", ack: event.state },
      Date.now(),
    );
    if (step.verdict === "unknown" || step.verdict === "stale") {
      const reason = step.verdict === "unknown" ? "unknown_playback" : "stale_ack";
      metrics.ignoredLampEvents.inc({ reason });
      log.info(
        { playbackId: event.playbackId, ack: event.state, state: step.state, reason },
        "lamp ack ignored",
      );
      return;
    }
    if (step.verdict === "moved" && step.kind && step.state)
      metrics.recordPlayback(step.kind, step.state, step.reason);
  }

  /**
   * A new, explicit playback of a stored result, sent once. Results are looked up only under the event's device,
   * so a device can never replay another device's result. It goes to the newest member's voice target; a failed
   * or cancelled result is not spoken on request either (recorded as a suppressed playback).
   */
  private async repeat(event: RepeatEvent): Promise<void> {
    const { reader, store, queue, metrics, log } = this.options;
    const resultKey = await reader.resultKeyById(event.deviceId, event.resultId);
    if (!resultKey) {
      metrics.ignoredLampEvents.inc({ reason: "repeat_unknown_result" });
      log.info({ deviceId: event.deviceId, resultId: event.resultId }, "repeat of an unknown result ignored");
      return;
    }
    const result = await reader.result(event.deviceId, resultKey);
    if (result.deviceId !== event.deviceId) {
      metrics.ignoredLampEvents.inc({ reason: "repeat_not_owner" });
      return;
    }
    const newest = newestMember(await reader.memberRuns(event.deviceId, result));
    const reason: PlaybackReason | undefined =
      result.outcome === "failed"
        ? "failed_result"
        : result.outcome === "cancelled"
          ? "cancelled_result"
          : undefined;
    const created = await store.createRepeat(
      {
        deviceId: event.deviceId,
        playbackId: event.playbackId,
        resultKey,
        resultId: result.resultId,
        state: reason ? "suppressed" : "queued",
        reason,
        voiceTargetId: newest.voiceTargetId,
        text: renderSpeech(result.fullText, { maxChars: this.options.speechMaxChars }),
      },
      Date.now(),
    );
    if (created.created) metrics.recordPlayback("repeat", created.state, reason);
    if (created.state === "queued")
      await queue.enqueue("repeat", { deviceId: event.deviceId, playbackId: event.playbackId });
  }
}
