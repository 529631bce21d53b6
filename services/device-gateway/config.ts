import { z } from "zod";
import { envInt, envJwtSecret } from "../../libs/config/env-fields.js";
import { osTokenLifetimeEnvFields } from "../../libs/auth/token-lifetime.js";
import { keepaliveEnvFields } from "../../libs/http/socket-keepalive.js";
import { LAMP_GATEWAY_HEARTBEAT_MS, LAMP_PRESENCE_TTL_MS } from "../../libs/contract/lamp-delivery.js";

export const deviceGatewayConfigSchema = z.object({
  /** Signs and verifies the `os` audience: Lamp and operator tokens at the Lamp socket and the OS API. */
  AUTH_JWT_SECRET: envJwtSecret,
  ...osTokenLifetimeEnvFields,
  /** Default voice-target expiry when the Lamp sends none. */
  VOICE_TARGET_TTL_MS: envInt(15 * 60_000, 1_000),
  LAMP_PRESENCE_TTL_MS: envInt(LAMP_PRESENCE_TTL_MS, 300),
  LAMP_GATEWAY_HEARTBEAT_MS: envInt(LAMP_GATEWAY_HEARTBEAT_MS, 100, 60_000),
  /** How long a voice.request waits for the Harness receipt before answering with `receipt: null`. */
  RECEIPT_WAIT_MS: envInt(5_000, 0, 60_000),
  /** How often each connected device's run.update log is re-read, in case a pub/sub notice was lost. */
  RUN_UPDATE_SWEEP_MS: envInt(30_000, 100, 600_000),
  GATEWAY_INSTANCE_ID: z
    .string()
    .regex(/^[A-Za-z0-9_.-]{1,64}$/)
    .optional(),
  /** Per device, across its sockets and every gateway replica: voice.requests in a burst, then refilled per second. */
  LAMP_RATE_LIMIT_BURST: envInt(10, 1, 1_000_000),
  LAMP_RATE_LIMIT_PER_SECOND: z.coerce.number().positive().max(1_000_000).default(2),
  /** Unresolved (pending) runs a device may have; a new voice.request beyond them is TOO_MANY_PENDING_RUNS. */
  LAMP_MAX_PENDING_RUNS: envInt(20, 1, 1_000_000),
  /** Repeats ("say that again") a device may have waiting to start; one more is TOO_MANY_REPEATS. */
  PLAYBACK_MAX_QUEUED_REPEATS: envInt(3, 1, 1_000),
  /** The run-resolver's retention of terminal runs: how long a new run keeps its device in the retention index. */
  RESULT_RETENTION_MS: envInt(30 * 86_400_000, 1_000),
  /** A device's sockets on one gateway instance; one more is closed with 4003 (docs/wire-protocol.md). */
  LAMP_MAX_SOCKETS_PER_DEVICE: envInt(4, 1, 1_000),
  /** Frames waiting to be answered on one Lamp socket beyond which the gateway stops reading it. */
  LAMP_SOCKET_MAX_QUEUED_FRAMES: envInt(16, 2, 10_000),
  ...keepaliveEnvFields,
});
