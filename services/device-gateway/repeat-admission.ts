import { randomUUID } from "node:crypto";
import { z } from "zod";
import type { OsDeviceKeys } from "../../libs/os-store/os-keys.js";
import { NamedLuaScript } from "../../libs/redis/lua-script.js";
import type { RedisClient } from "../../libs/redis/redis-client.js";

/** A repeated "say that again" (same requestId) keeps its playbackId this long. */
const REPEAT_REQUEST_TTL_SECONDS = 24 * 3600;

/**
 * A reservation whose playback the tts-dispatcher has not created by then was lost (the gateway died before its
 * lamp_events append): the tts-dispatcher creates a repeat's playback moments after it is accepted.
 */
const RESERVATION_LOST_AFTER_MS = 60_000;

const admissionSchema = z.discriminatedUnion("verdict", [
  z.object({ verdict: z.literal("accepted"), playbackId: z.string().min(1) }),
  z.object({ verdict: z.literal("refused"), queued: z.number().int().nonnegative() }),
]);
export type RepeatAdmission = z.infer<typeof admissionSchema>;

const acceptRepeat = NamedLuaScript.fromFile<
  {
    requestId: string;
    playbackId: string;
    now: number;
    limit: number;
    requestTtlSeconds: number;
    lostAfterMs: number;
  },
  typeof admissionSchema
>(new URL("./lua/accept-repeat-1.lua", import.meta.url), admissionSchema);

/**
 * Admits a device's "say that again" within its limit of queued repeats (PLAYBACK_MAX_QUEUED_REPEATS), in one step
 * with minting its playbackId: each queued repeat holds the device's playback line for up to an ack timeout, so an
 * unbounded number would keep the device's own answers waiting.
 */
export function admitRepeat(
  redis: RedisClient,
  device: OsDeviceKeys,
  requestId: string,
  maxQueuedRepeats: number,
): Promise<RepeatAdmission> {
  return acceptRepeat.run(redis, [device.base], {
    requestId,
    playbackId: randomUUID(),
    now: Date.now(),
    limit: maxQueuedRepeats,
    requestTtlSeconds: REPEAT_REQUEST_TTL_SECONDS,
    lostAfterMs: RESERVATION_LOST_AFTER_MS,
  });
}
