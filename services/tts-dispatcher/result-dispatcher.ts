import type { OsResolved } from "../../libs/contract/pipeline-payloads.js";
import { resultKeyOf } from "../../libs/os-store/os-keys.js";
import type { CrashPoint } from "../../libs/test-support/crash-point.js";
import { decideDelivery, type DeliveryDecision } from "./delivery/decide-delivery.js";
import { answerPlaybackId, noticePlaybackId, type ResultIdentity } from "./playback/playback-ids.js";
import { renderSpeech } from "./speech/render-speech.js";
import { StoreRecordError } from "./store/os-store-reader.js";
import type { NewOutboxEntry, OutboxCreation } from "./store/playback-store.js";
import type { PlaybackContext } from "./playback-context.js";

export interface ResultDispatcherOptions extends PlaybackContext {
  failureNoticeText: string;
  crashPoint: CrashPoint;
}

/**
 * `os.resolved` → the result's one outbox entry, persisted with its dedupe identity before any job exists, then the
 * job. Only this path creates an answer: nothing else in the system asks to speak.
 */
export class ResultDispatcher {
  constructor(private readonly options: ResultDispatcherOptions) {}

  async dispatch(resolved: OsResolved): Promise<void> {
    const { reader, store } = this.options;
    const identity: ResultIdentity = {
      deviceId: resolved.deviceId,
      serverInstanceId: resolved.serverInstanceId,
      resultId: resolved.resultId,
    };
    const resultKey = resultKeyOf(identity.serverInstanceId, identity.resultId);
    const inputs = await reader.dispatchInputs(identity.deviceId, resultKey);
    if ("known" in inputs) {
      const { known } = inputs;
      // Redelivery: the entry decides; re-adding a queued job is a no-op unless a crash came between the two.
      const notice = known.noticePlaybackId
        ? {
            playbackId: known.noticePlaybackId,
            state: await store.playbackState(identity.deviceId, known.noticePlaybackId),
          }
        : undefined;
      await this.enqueueQueued(identity.deviceId, {
        created: false,
        state: known.state,
        playbackId: known.playbackId,
        notice: notice?.state ? { playbackId: notice.playbackId, state: notice.state } : undefined,
      });
      return;
    }
    const { result, runs } = inputs;
    if (result.deviceId !== identity.deviceId)
      throw new StoreRecordError("RESULT_INVALID", `${resultKey} belongs to ${result.deviceId}`);
    const now = Date.now();
    const decision = decideDelivery(result.outcome, runs, now);
    const speechText = renderSpeech(result.fullText, { maxChars: this.options.speechMaxChars });
    const creation = await store.createOutboxEntry(
      this.entryFor(identity, resultKey, decision, speechText),
      now,
    );
    if (creation.created) this.recordCreation(creation, decision);
    await this.options.crashPoint.reach("tts-dispatcher.after-outbox");
    await this.enqueueQueued(identity.deviceId, creation);
  }

  private entryFor(
    identity: ResultIdentity,
    resultKey: string,
    decision: DeliveryDecision,
    speechText: string,
  ): NewOutboxEntry {
    const { newest } = decision;
    const common = {
      deviceId: identity.deviceId,
      resultKey,
      resultId: identity.resultId,
      speechText,
      voiceTargetExpiresAt: newest.voiceTargetExpiresAt,
      newestRunId: newest.runId,
    };
    if (decision.action === "speak")
      return {
        ...common,
        state: "queued",
        voiceTargetId: newest.voiceTargetId,
        playbackId: answerPlaybackId(identity),
      };
    const noticeText = this.options.failureNoticeText;
    return {
      ...common,
      state: "suppressed",
      reason: decision.reason,
      // Mixed destinations have no single target to report; every other reason keeps the newest member's.
      voiceTargetId: decision.reason === "mixed_destinations" ? undefined : newest.voiceTargetId,
      notice:
        decision.notice && noticeText
          ? { playbackId: noticePlaybackId(identity), text: noticeText }
          : undefined,
    };
  }

  private recordCreation(creation: OutboxCreation, decision: DeliveryDecision): void {
    const { metrics, log } = this.options;
    if (creation.state === "queued") metrics.recordPlayback("answer", "queued");
    else metrics.recordOutbox(creation.state, decision.action === "suppress" ? decision.reason : undefined);
    if (creation.notice) metrics.recordPlayback("notice", creation.notice.state);
    log.info(
      { state: creation.state, reason: decision.action === "suppress" ? decision.reason : undefined },
      "outbox entry created",
    );
  }

  private async enqueueQueued(deviceId: string, creation: OutboxCreation): Promise<void> {
    const { queue } = this.options;
    if (creation.state === "queued" && creation.playbackId)
      await queue.enqueue("answer", { deviceId, playbackId: creation.playbackId });
    if (creation.notice?.state === "queued")
      await queue.enqueue("notice", { deviceId, playbackId: creation.notice.playbackId });
  }
}
