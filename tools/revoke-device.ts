import { parseArgs } from "node:util";
import { Redis } from "ioredis";
import { deviceIdSchema } from "../libs/auth/tokens.js";
import { baseEnvSchema } from "../libs/config/env-fields.js";
import { loadConfigOrExit } from "../libs/config/load-config.js";
import { Keyspace } from "../libs/redis/keyspace.js";
import { revokeDevice } from "../services/harness-gateway/revocation/device-revocation.js";

/**
 * `tsx tools/revoke-device.ts --device lamp-1`: the operator's offline twin of `DELETE /v1/admin/devices/:id`
 * (uses REDIS_URL and KEY_PREFIX). Deletes the device's receipts, results and event log, refuses its older
 * tokens and closes its sessions; prints what was removed as JSON.
 */
const base = loadConfigOrExit(baseEnvSchema);
const { values } = parseArgs({ options: { device: { type: "string" } } });
const deviceId = deviceIdSchema.safeParse(values.device);
if (!deviceId.success) {
  process.stderr.write("usage: tsx tools/revoke-device.ts --device <deviceId>\n");
  process.exit(64);
}
const redis = new Redis(base.REDIS_URL, { maxRetriesPerRequest: 3 });
try {
  process.stdout.write(
    `${JSON.stringify(await revokeDevice(redis, new Keyspace(base.KEY_PREFIX), deviceId.data))}\n`,
  );
} finally {
  redis.disconnect();
}
