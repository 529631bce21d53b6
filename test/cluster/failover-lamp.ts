import { randomUUID } from "node:crypto";
import type { PlaybackStart } from "../../libs/contract/lamp-wire.js";
import type { RunUpdateFrame } from "../../libs/contract/run-update.js";
import { sleep } from "../../libs/timing/sleep.js";
import { TestLamp, type SayOptions } from "../e2e/test-lamp.js";

const RECONNECT_PAUSE_MS = 200;
const MAX_REFUSALS = 75;

/**
 * A Lamp behind a load balancer of several device-gateways: when its connection ends it reconnects to the next
 * gateway that accepts it, and a voice.request whose answer was lost with the connection is sent again with the
 * same requestId (the OS answers it from the run it registered). What it heard is kept across connections.
 */
export class FailoverLamp {
  /** Every connection so far, in order; the last one is the current one. */
  readonly connections: TestLamp[] = [];
  private gateway: number;
  private stopped = false;
  private opening: Promise<void> | undefined;

  constructor(
    readonly deviceId: string,
    private readonly urls: readonly string[],
    private readonly token: () => Promise<string>,
    firstGateway: number,
  ) {
    this.gateway = firstGateway % urls.length;
  }

  /** Which device-gateway the current connection is on. */
  get gatewayIndex(): number {
    return this.gateway;
  }

  /** Every playback.start heard, over every connection. */
  get utterances(): PlaybackStart[] {
    return this.connections.flatMap((lamp) => lamp.utterances);
  }

  /** Every run.update received, over every connection. */
  get runUpdates(): RunUpdateFrame[] {
    return this.connections.flatMap((lamp) => lamp.runUpdates);
  }

  async connect(): Promise<void> {
    await this.connected();
  }

  /** A refused request (e.g. while a Redis node restarts) is retried too, as a Lamp would, up to a limit. */
  async say(options: Omit<SayOptions, "requestId">): Promise<{ runId: string; requestId: string }> {
    const requestId = randomUUID();
    for (let refusals = 0; ;) {
      const lamp = await this.connected();
      try {
        return await lamp.say({ ...options, requestId });
      } catch (error) {
        if (lamp.closed) continue;
        refusals += 1;
        if (refusals >= MAX_REFUSALS) throw error;
        await sleep(RECONNECT_PAUSE_MS);
      }
    }
  }

  /** "Say that again": a playback.repeat on the current connection, sent again if that connection ends first. */
  async repeat(resultId: string): Promise<Record<string, unknown>> {
    for (;;) {
      const lamp = await this.connected();
      try {
        return await lamp.repeat(resultId);
      } catch (error) {
        if (!lamp.closed) throw error;
      }
    }
  }

  stop(): void {
    this.stopped = true;
    for (const lamp of this.connections) lamp.close();
  }

  /** The open connection; one attempt at a time, moving to the next gateway when one refuses. */
  private async connected(): Promise<TestLamp> {
    for (;;) {
      if (this.stopped) throw new Error(`${this.deviceId}: lamp stopped`);
      const current = this.connections.at(-1);
      if (current && !current.closed) return current;
      this.opening ??= this.open().finally(() => (this.opening = undefined));
      await this.opening;
    }
  }

  private async open(): Promise<void> {
    const url = this.urls[this.gateway];
    if (url === undefined) throw new Error(`${this.deviceId}: no device-gateway ${this.gateway}`);
    try {
      const lamp = await TestLamp.connect({
        url,
        token: await this.token(),
        // A Lamp stays connected: it reconnects on its own, so what it is owed can reach it.
        onClose: () => {
          if (!this.stopped) this.connected().catch(() => undefined);
        },
      });
      this.connections.push(lamp);
    } catch {
      this.gateway = (this.gateway + 1) % this.urls.length;
      await sleep(RECONNECT_PAUSE_MS);
    }
  }
}
