import { canonicalHash } from "../../../libs/contract/canonical-json.js";

export interface ResultIdentity {
  deviceId: string;
  serverInstanceId: string;
  resultId: string;
}

const short = (value: unknown) => canonicalHash(value).slice(0, 40);

/** The answer's playback id is derived from the result identity, so a result can only ever have one answer. */
export const answerPlaybackId = (identity: ResultIdentity) =>
  `answer-${short({ kind: "answer", ...identity })}`;

export const noticePlaybackId = (identity: ResultIdentity) =>
  `notice-${short({ kind: "notice", ...identity })}`;

/**
 * The BullMQ job id of one playback (derived from the result identity for answers and notices): re-adding it while
 * the job is retained is a no-op. BullMQ ids may not contain ':', hence a hash rather than the raw identity.
 */
export const playbackJobId = (deviceId: string, playbackId: string) =>
  `pb-${short({ deviceId, playbackId })}`;
