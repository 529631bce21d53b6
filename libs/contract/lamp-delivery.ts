export * from "./lamp-payloads.js";

/**
 * How the OS side moves Lamp traffic between processes (docs/architecture.md, "One voice request, end to end"):
 * - the device-gateway instance holding a Lamp's WebSocket advertises it in a presence key with a TTL
 *   (`OsDeviceKeys.lampPresence` = gateway instance id), refreshed while the socket is open;
 * - each gateway instance keeps a heartbeat key alive (`Keyspace.lampGatewayAlive(instanceId)`);
 * - the playback worker (tts-dispatcher) writes `playback.start` to that instance's delivery stream, only while
 *   that instance's heartbeat is alive;
 * - the gateway forwards what the Lamp says about playback (acks, "say that again") to `os.lamp_events`.
 * Those streams are in the catalog (`STREAM_CATALOG.lampDelivery`, `STREAM_CATALOG.lampEvents`).
 *
 * Presence TTL: a gateway refreshes every third of it; a missing key proves there is no live Lamp connection. */
export const LAMP_PRESENCE_TTL_MS = 15_000;

/**
 * A live gateway instance beats `Keyspace.lampGatewayAlive(instanceId)` this often, with a TTL of three beats.
 * A presence key naming an instance without a heartbeat names a dead process (SIGKILL leaves its presence until the
 * TTL): nothing written to its delivery stream could reach a Lamp, so the worker treats the Lamp as offline.
 */
export const LAMP_GATEWAY_HEARTBEAT_MS = 1_000;
