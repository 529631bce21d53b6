/**
 * One place that says how keys are named. Every key carries the deployment prefix (tests use a fresh prefix per
 * file) and per-device state carries a hash tag so each device's atomic steps touch one Redis Cluster slot.
 * `partitions` is the deployment's STREAM_PARTITIONS: how many partitions a partitioned pipeline stream has.
 */
export class Keyspace {
  constructor(
    readonly prefix: string,
    readonly partitions = 1,
  ) {
    if (!Number.isInteger(partitions) || partitions < 1)
      throw new RangeError(`partitions must be a positive integer, got ${partitions}`);
  }

  /**
   * One partition of a Redis Stream of the pipeline (`harness.evidence`, `os.routed`, ...):
   * `<prefix>:stream:{<name>:<partition>}`. A stream that is not partitioned has partition 0 only. The hash tag is
   * the stream and partition, so a partition and its dead letters share one slot and partitions spread over nodes.
   */
  stream(name: string, partition = 0): string {
    return `${this.prefix}:stream:{${name}:${partition}}`;
  }

  deadLetter(streamName: string, partition = 0): string {
    return `${this.stream(streamName, partition)}:dlq`;
  }

  /** Base of a device's Harness-side state; everything under it shares one hash slot. */
  harnessDevice(deviceId: string): string {
    return `${this.prefix}:h:{d:${deviceId}}`;
  }

  /** Base of a device's OS-side state; everything under it shares one hash slot. */
  osDevice(deviceId: string): string {
    return `${this.prefix}:os:{d:${deviceId}}`;
  }

  /** Base of one agent's evidence state (bindings, session graphs); one hash slot per agent. */
  agent(agentId: string): string {
    return `${this.prefix}:ev:{a:${agentId}}`;
  }

  /** Present while that device-gateway instance runs (TTL'd heartbeat; absent = the process is gone). */
  lampGatewayAlive(gatewayInstanceId: string): string {
    return this.key("os", "lamp-gateway", gatewayInstanceId, "alive");
  }

  /**
   * The key prefix BullMQ queues use (`{<prefix>:bull}`): the playback worker's and the console's board's. It is a
   * hash tag, so every key of a queue lands in one Redis Cluster slot (BullMQ's scripts touch several at once).
   */
  get bullPrefix(): string {
    return `{${this.prefix}:bull}`;
  }

  /** Any other key: prefix plus parts. */
  key(...parts: string[]): string {
    return [this.prefix, ...parts].join(":");
  }
}
