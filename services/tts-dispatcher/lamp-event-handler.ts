import type { LampEvent } from "../../libs/contract/lamp-delivery.js";
import { newestMember, repeatBlocker } from "./delivery/decide-delivery.js";
import { renderSpeech } from "./speech/render-speech.js";
import type { PlaybackContext } from "./playback-context.js";

type AckEvent = Extract<LampEvent, { kind: "playback.ack" }>;
type RepeatEvent = Extract<LampEvent, { kind: "playback.repeat" }>;
type ConnectedEvent = Extract<LampEvent, { kind: "lamp.connected" }>;

export type LampEventHandlerOptions = PlaybackContext;

/** What the Lamp says, forwarded by the device-gateway: acks, "say that again", and that it is connected. */
export class LampEventHandler {
  constructor(private readonly options: LampEventHandlerOptions) {}

  handle(event: LampEvent): Promise<void> {
    switch (event.kind) {
      case "playback.ack":
        return this.applyAck(event);
      case "playback.repeat":
        return this.repeat(event);
      case "lamp.connected":
        return this.wakeWaiting(event);
    }
  }

  /** The Lamp is back: every playback waiting for it claims now instead of at its next re-check. */
  private async wakeWaiting(event: ConnectedEvent): Promise<void> {
    const { store, queue, metrics, log } = this.options;
    const waiting = await store.awaitingLamp(event.deviceId);
    for (const playbackId of waiting) {
      const outcome = await queue.wake(event.deviceId, playbackId);
      metrics.lampWakes.inc({ outcome });
      if (outcome !== "promoted")
        log.info({ deviceId: event.deviceId, playbackId, outcome }, "waiting playback not promoted");
    }
    if (waiting.length > 0)
      log.info(
        { deviceId: event.deviceId, gatewayId: event.gatewayId, waiting: waiting.length },
        "lamp back",
      );
  }

  private async applyAck(event: AckEvent): Promise<void> {
    const { store, queue, metrics, log } = this.options;
    const now = Date.now();
    const step = await store.ack(event.deviceId, event.playbackId, event.state, now);
    if (step.verdict === "unknown" || step.verdict === "stale") {
      const reason = step.verdict === "unknown" ? "unknown_playback" : "stale_ack";
      metrics.ignoredLampEvents.inc({ reason });
      log.info(
        {
          playbackId: event.playbackId,
          ack: event.state,
          state: "state" in step ? step.state : undefined,
          reason,
        },
        "lamp ack ignored",
      );
      return;
    }
    if (step.verdict === "recorded") return;
    metrics.recordPlayback(step.kind, step.state, step.reason);
    if (step.sentAt !== undefined) {
      metrics.ackWait.observe({ outcome: step.state }, Math.max(0, now - step.sentAt) / 1000);
      // Its job waits, delayed until the ack deadline, for this: it finishes now.
      await queue.wake(event.deviceId, event.playbackId);
    }
    // The playback started on the Lamp (or ended): the next one in the device's line may go.
    if (step.wake !== undefined) await queue.wake(event.deviceId, step.wake);
  }

  /**
   * A new, explicit playback of a stored result, sent once. Results are looked up only under the event's device,
   * so a device can never replay another device's result. It goes to the voice target the Lamp named, else to that
   * of the device's latest run, else to the newest member's. A result that is not to be spoken on request either
   * (repeatBlocker) is recorded as a suppressed playback.
   */
  private async repeat(event: RepeatEvent): Promise<void> {
    const { reader, store, queue, metrics, log } = this.options;
    const resultKey = await reader.resultKeyById(event.deviceId, event.resultId);
    if (!resultKey) {
      await store.releaseRepeat(event.deviceId, event.playbackId);
      metrics.ignoredLampEvents.inc({ reason: "repeat_unknown_result" });
      log.info({ deviceId: event.deviceId, resultId: event.resultId }, "repeat of an unknown result ignored");
      return;
    }
    const result = await reader.result(event.deviceId, resultKey);
    if (result.deviceId !== event.deviceId) {
      await store.releaseRepeat(event.deviceId, event.playbackId);
      metrics.ignoredLampEvents.inc({ reason: "repeat_not_owner" });
      return;
    }
    const reason = repeatBlocker(result.outcome, await store.outboxEntry(event.deviceId, resultKey));
    const voiceTargetId =
      event.voiceTargetId ??
      (await reader.latestRunVoiceTarget(event.deviceId)) ??
      newestMember(await reader.memberRuns(event.deviceId, result)).voiceTargetId;
    const created = await store.createRepeat(
      {
        deviceId: event.deviceId,
        playbackId: event.playbackId,
        resultKey,
        resultId: result.resultId,
        state: reason ? "suppressed" : "queued",
        reason,
        voiceTargetId,
        text: renderSpeech(result.fullText, { maxChars: this.options.speechMaxChars }),
      },
      Date.now(),
    );
    if (created.created) metrics.recordPlayback("repeat", created.state, reason);
    if (created.state === "queued")
      await queue.enqueue("repeat", { deviceId: event.deviceId, playbackId: event.playbackId });
  }
}
