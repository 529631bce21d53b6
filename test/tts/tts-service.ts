import { hostServices, type HostedServices } from "../../libs/service/service-host.js";
import { ttsDispatcherService } from "../../services/tts-dispatcher/definition.js";
import { hostedServiceEnv, type TestRedis } from "../helpers/test-redis.js";

/** Fast settings so retries, ack timeouts and stalled-job recovery happen within a test. */
export function ttsTestEnv(t: TestRedis, overrides: Record<string, string> = {}): Record<string, string> {
  return {
    ...hostedServiceEnv(t),
    STREAM_BLOCK_MS: "100",
    STREAM_RETRY_DELAY_MS: "50",
    PLAYBACK_ACK_TIMEOUT_MS: "400",
    PLAYBACK_RETRY_DELAY_MS: "50",
    PLAYBACK_MAX_ATTEMPTS: "6",
    PLAYBACK_LOCK_DURATION_MS: "1000",
    PLAYBACK_STALLED_INTERVAL_MS: "300",
    ...overrides,
  };
}

export function startTtsDispatcher(
  t: TestRedis,
  overrides: Record<string, string> = {},
): Promise<HostedServices> {
  return hostServices("test", [ttsDispatcherService], ttsTestEnv(t, overrides));
}
