/**
 * One place that says how keys are named. Every key carries the deployment prefix (tests use a fresh prefix per
 * file) and per-device state carries a hash tag so each device's atomic steps touch one Redis Cluster slot.
 */
export class Keyspace {
  constructor(readonly prefix: string) {}

  /** A Redis Stream of the pipeline (`harness.evidence`, `os.routed`, ...). */
  stream(name: string): string {
    return `${this.prefix}:stream:${name}`;
  }

  deadLetter(streamName: string): string {
    return `${this.stream(streamName)}:dlq`;
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

  /** Which device-gateway instance holds the device's Lamp socket right now (TTL'd; absent = not connected). */
  lampPresence(deviceId: string): string {
    return `${this.osDevice(deviceId)}:lamp-presence`;
  }

  /** Present while that device-gateway instance runs (TTL'd heartbeat; absent = the process is gone). */
  lampGatewayAlive(gatewayInstanceId: string): string {
    return this.key("os", "lamp-gateway", gatewayInstanceId, "alive");
  }

  /** The key prefix BullMQ queues use (`<prefix>:bull`): the playback worker's and the console's board's. */
  get bullPrefix(): string {
    return `${this.prefix}:bull`;
  }

  /** Any other key: prefix plus parts. */
  key(...parts: string[]): string {
    return [this.prefix, ...parts].join(":");
  }
}
