import type { Keyspace } from "../redis/keyspace.js";
import { partitionOf } from "../redis/partitions.js";

/** `resultKey = <serverInstanceId>|<resultId>`: the store's name for one result identity of a device. */
export function resultKeyOf(serverInstanceId: string, resultId: string): string {
  return `${serverInstanceId}|${resultId}`;
}

/**
 * The OS store key layout of one device (docs/architecture.md, "OS store"): every key shares the device's hash tag,
 * so a Lua step that receives `base` as its only declared key may derive all of these inside the script.
 */
export class OsDeviceKeys {
  readonly base: string;

  constructor(
    keys: Keyspace,
    readonly deviceId: string,
  ) {
    this.base = keys.osDevice(deviceId);
  }

  run(runId: string): string {
    return `${this.base}:run:${runId}`;
  }

  request(requestId: string): string {
    return `${this.base}:request:${requestId}`;
  }

  idempotencyKey(key: string): string {
    return `${this.base}:key:${key}`;
  }

  delivery(deliveryId: string): string {
    return `${this.base}:delivery:${deliveryId}`;
  }

  /** When an operator revoked the device's Lamp credentials (epoch ms); tokens issued until then are refused. */
  get revokedAt(): string {
    return `${this.base}:revoked-at`;
  }

  get runs(): string {
    return `${this.base}:runs`;
  }

  /** The device's voice.request token bucket (`tokens`, `at`), shared by all its sockets and gateway replicas. */
  get voiceRequestRate(): string {
    return `${this.base}:voice-rate`;
  }

  get pendingRuns(): string {
    return `${this.base}:runs:pending`;
  }

  /**
   * The router's deadline index: pending runs scored by `voiceTargetExpiresAt` (the pending index is scored by
   * creation time). A run leaves it when the router ends it, or when it comes due after it ended otherwise.
   */
  get runDeadlines(): string {
    return `${this.base}:runs:deadlines`;
  }

  result(resultKey: string): string {
    return `${this.base}:result:${resultKey}`;
  }

  resultId(resultId: string): string {
    return `${this.base}:result-id:${resultId}`;
  }

  outbox(resultKey: string): string {
    return `${this.base}:outbox:${resultKey}`;
  }

  playback(playbackId: string): string {
    return `${this.base}:playback:${playbackId}`;
  }

  /**
   * Playbacks waiting for the device's Lamp to connect (a zset of playbackIds scored by when their job checks
   * again), kept by the tts-dispatcher's claim step; a `lamp.connected` wakes them.
   */
  get awaitingLamp(): string {
    return `${this.base}:playbacks:awaiting-lamp`;
  }

  /**
   * The device's playback line: playbackIds (answers, failure notices, repeats) in the order the tts-dispatcher
   * created them (a list). Only its head is sent; a playback leaves it when it started on the Lamp or ended.
   */
  get playbackLine(): string {
    return `${this.base}:playbacks:line`;
  }

  /**
   * The device's repeats accepted by the device-gateway and not yet started nor ended (zset playbackId -> acceptedAt):
   * what PLAYBACK_MAX_QUEUED_REPEATS bounds. The tts-dispatcher removes each when it leaves the line.
   */
  get repeatsAccepted(): string {
    return `${this.base}:playbacks:repeats`;
  }

  /**
   * The device's speech order: resultKeys scored by when the router routed them (zset). The router adds each
   * routed result; the tts-dispatcher starts a result's playback only once no earlier entry is still owed (bounded
   * by SPEECH_ORDER_WAIT_MS), and takes it out when its first playback leaves `queued`.
   */
  get speechOrder(): string {
    return `${this.base}:speech-order`;
  }

  get rejections(): string {
    return `${this.base}:rejections`;
  }

  get protocolErrors(): string {
    return `${this.base}:protocol-errors`;
  }

  /** Commands from the device-gateway to whichever router holds the device (send, stop). */
  get commands(): string {
    return `${this.base}:commands`;
  }

  /**
   * Which router replica owns the device's Harness session: set by the holder of the device's partition when it
   * opens the session, fencing every router write to the device (a replica that lost the partition finds another
   * owner here and its writes fail `LEASE_LOST`).
   */
  get lease(): string {
    return `${this.base}:lease`;
  }

  /** Present while the device is revoked and its Lamp has not returned with a newer token: no Harness session. */
  get sessionRevoked(): string {
    return `${this.base}:session-revoked`;
  }

  /** The router's account of the device's Harness session (libs/os-store/harness-session-record.ts). */
  get harnessSession(): string {
    return `${this.base}:harness-session`;
  }

  /** The Harness transport resume point `{serverInstanceId, cursor}`. */
  get cursor(): string {
    return `${this.base}:cursor`;
  }

  /** Results held back until their members' receipts bind. */
  get waiting(): string {
    return `${this.base}:waiting`;
  }

  /** Held results the router gave up on because their receipts never bound (a bounded log, newest kept). */
  get heldExpired(): string {
    return `${this.base}:held-expired`;
  }

  /**
   * The device's ordered run.update log (stream ids `0-<updateId>`), written by `emit_run_update` in the Lua step
   * that changed the run; also the pub/sub channel on which each append names the device.
   */
  get runUpdates(): string {
    return `${this.base}:run-updates`;
  }

  repeatRequest(requestId: string): string {
    return `${this.base}:repeat-request:${requestId}`;
  }
}

/** Pub/sub channel naming each device whose Lamp credentials were just revoked (gateways close its sockets). */
export function lampRevocationsChannel(keys: Keyspace): string {
  return keys.key("os", "lamp-revocations");
}

/** Pattern matching every device's run.update channel (a gateway subscribes once, the message names the device). */
export function runUpdatesChannelPattern(keys: Keyspace): string {
  return `${keys.osDevice("*")}:run-updates`;
}

/**
 * The keys of one work partition (`partitionOf(deviceId, STREAM_PARTITIONS)`), all under one hash tag: the router
 * replica's lease on it, its active devices and the channel that wakes its holder for a device's new commands.
 */
export class OsPartitionKeys {
  readonly base: string;

  constructor(
    keys: Keyspace,
    readonly partition: number,
  ) {
    this.base = keys.key("os", `{part:${partition}}`);
  }

  static ofDevice(keys: Keyspace, deviceId: string, partitions: number): OsPartitionKeys {
    return new OsPartitionKeys(keys, partitionOf(deviceId, partitions));
  }

  /** Which router replica serves the partition's devices (SET NX PX, renewed while held). */
  get lease(): string {
    return `${this.base}:lease`;
  }

  /**
   * deviceIds of the partition that are active: their Lamp is connected, or they have pending runs, queued commands
   * or held results. The device-gateway adds a device after the step that made it active; the router removes it
   * once it has been idle for a grace period (and adds it back when its re-check finds it active after all).
   */
  get devices(): string {
    return `${this.base}:devices`;
  }

  /** Pub/sub channel naming a device of the partition that has new commands or just became active. */
  get wake(): string {
    return `${this.base}:wake`;
  }
}

/** Router replicas alive now: a zset of owner names scored by when their heartbeat runs out (epoch ms). */
export function routerReplicasKey(keys: Keyspace): string {
  return keys.key("os", "router-replicas");
}

/** Every partition's active-device set (the console's list of devices the routers serve). */
export function activeDeviceKeys(keys: Keyspace, partitions: number): string[] {
  return Array.from({ length: partitions }, (_, partition) => new OsPartitionKeys(keys, partition).devices);
}
