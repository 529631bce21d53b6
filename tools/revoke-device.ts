import { z } from "zod";
import { deviceIdSchema } from "../libs/auth/tokens.js";
import { baseEnvSchema } from "../libs/config/env-fields.js";
import { loadConfigOrExit } from "../libs/config/load-config.js";
import { Keyspace } from "../libs/redis/keyspace.js";
import { openRedisClient } from "../libs/redis/connections.js";
import { revokeLamp } from "../services/device-gateway/lamp-revocation.js";
import { revokeDevice } from "../services/harness-gateway/revocation/device-revocation.js";
import { readCommandLine } from "./cli-args.js";

const HELP = [
  "usage: npm run revoke -- --device <id> [--side both|harness|os]",
  "",
  "Revokes a device offline, straight in Redis (REDIS_URL or REDIS_CLUSTER_NODES, KEY_PREFIX); prints what was done as JSON.",
  "",
  "  --device <id>            the device to revoke (required)",
  "  --side both|harness|os   harness: delete its receipts, results and event log, refuse its older Harness tokens;",
  "                           os: refuse its older tokens everywhere, close its sockets; both (default)",
  "  -h, --help               this text",
].join("\n");

/**
 * `tsx tools/revoke-device.ts --device lamp-1 [--side both|harness|os]`: the operator's offline twin of
 * `DELETE /v1/admin/devices/:id` (Harness: deletes the device's receipts, results and event log, refuses its older
 * Harness tokens, closes its sessions) and `DELETE /v1/lamp/devices/:id` (OS: refuses its older tokens at the Lamp
 * socket, the OS API and the Harness, closes its Lamp sockets and the router's Harness session, which stays closed
 * until the Lamp connects with a newer token). Uses REDIS_URL (or REDIS_CLUSTER_NODES) and KEY_PREFIX; prints what was
 * done as JSON.
 */
const { device, side } = readCommandLine({
  name: "revoke",
  help: HELP,
  options: { device: { type: "string" }, side: { type: "string" } },
  schema: z.object({ device: deviceIdSchema, side: z.enum(["both", "harness", "os"]).default("both") }),
});
const base = loadConfigOrExit(baseEnvSchema);
const redis = openRedisClient(base.REDIS_URL, base.REDIS_CLUSTER_NODES, { maxRetriesPerRequest: 3 });
const keys = new Keyspace(base.KEY_PREFIX, base.STREAM_PARTITIONS);
try {
  const harness = side === "os" ? undefined : await revokeDevice(redis, keys, device);
  const os = side === "harness" ? undefined : await revokeLamp(redis, keys, device);
  process.stdout.write(`${JSON.stringify({ deviceId: device, harness, os })}\n`);
} finally {
  redis.disconnect();
}
