import { parseArgs } from "node:util";
import { Redis } from "ioredis";
import { z } from "zod";
import { deviceIdSchema } from "../libs/auth/tokens.js";
import { baseEnvSchema } from "../libs/config/env-fields.js";
import { loadConfigOrExit } from "../libs/config/load-config.js";
import { Keyspace } from "../libs/redis/keyspace.js";
import { revokeLamp } from "../services/device-gateway/lamp-revocation.js";
import { revokeDevice } from "../services/harness-gateway/revocation/device-revocation.js";

/**
 * `tsx tools/revoke-device.ts --device lamp-1 [--side both|harness|os]`: the operator's offline twin of
 * `DELETE /v1/admin/devices/:id` (Harness: deletes the device's receipts, results and event log, refuses its older
 * Harness tokens, closes its sessions) and `DELETE /v1/lamp/devices/:id` (OS: refuses its older tokens at the Lamp
 * socket, the OS API and the Harness, closes its Lamp sockets and the router's Harness session, which stays closed
 * until the Lamp connects with a newer token). Uses REDIS_URL and KEY_PREFIX; prints what was done as JSON.
 */
const base = loadConfigOrExit(baseEnvSchema);
const { values } = parseArgs({ options: { device: { type: "string" }, side: { type: "string" } } });
const deviceId = deviceIdSchema.safeParse(values.device);
const side = z.enum(["both", "harness", "os"]).safeParse(values.side ?? "both");
if (!deviceId.success || !side.success) {
  process.stderr.write("usage: tsx tools/revoke-device.ts --device <deviceId> [--side both|harness|os]\n");
  process.exit(64);
}
const redis = new Redis(base.REDIS_URL, { maxRetriesPerRequest: 3 });
const keys = new Keyspace(base.KEY_PREFIX);
try {
  const harness = side.data === "os" ? undefined : await revokeDevice(redis, keys, deviceId.data);
  const os = side.data === "harness" ? undefined : await revokeLamp(redis, keys, deviceId.data);
  process.stdout.write(`${JSON.stringify({ deviceId: deviceId.data, harness, os })}\n`);
} finally {
  redis.disconnect();
}
