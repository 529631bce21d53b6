import { WebSocket } from "ws";

/** One simulated Lamp: a real WebSocket to the device-gateway, its frames kept for the caller to wait on. */
export class SimulatedLamp {
  readonly frames: Record<string, unknown>[] = [];
  private readonly listeners = new Set<(frame: Record<string, unknown>) => void>();

  private constructor(
    readonly deviceId: string,
    readonly socket: WebSocket,
    keepFrames: boolean,
  ) {
    socket.on("message", (data) => {
      const frame = JSON.parse(data.toString()) as Record<string, unknown>;
      if (keepFrames) this.frames.push(frame);
      for (const listener of this.listeners) listener(frame);
    });
  }

  static open(url: string, deviceId: string, token: string, keepFrames = true): Promise<SimulatedLamp> {
    const socket = new WebSocket(url, { headers: { authorization: `Bearer ${token}` } });
    const lamp = new SimulatedLamp(deviceId, socket, keepFrames);
    return new Promise((resolve, reject) => {
      socket.once("open", () => resolve(lamp));
      socket.once("error", reject);
    });
  }

  /** Resolves with the first frame `match` accepts (among those already kept or still to come). */
  next(
    match: (frame: Record<string, unknown>) => boolean,
    timeoutMs: number,
  ): Promise<Record<string, unknown>> {
    const kept = this.frames.find(match);
    if (kept) return Promise.resolve(kept);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.listeners.delete(listener);
        reject(new Error(`${this.deviceId}: no matching frame within ${timeoutMs} ms`));
      }, timeoutMs);
      const listener = (frame: Record<string, unknown>) => {
        if (!match(frame)) return;
        clearTimeout(timer);
        this.listeners.delete(listener);
        resolve(frame);
      };
      this.listeners.add(listener);
    });
  }

  send(frame: unknown): void {
    this.socket.send(JSON.stringify(frame));
  }

  close(): Promise<void> {
    if (this.socket.readyState === WebSocket.CLOSED) return Promise.resolve();
    return new Promise((resolve) => {
      this.socket.once("close", () => resolve());
      this.socket.close(1000, "done");
    });
  }
}

/** Opens `count` Lamps `concurrency` at a time (device ids `<prefix>-<n>`). */
export async function openFleet(options: {
  url: string;
  count: number;
  concurrency: number;
  deviceId: (n: number) => string;
  token: (deviceId: string) => Promise<string>;
  keepFrames?: (n: number) => boolean;
}): Promise<SimulatedLamp[]> {
  const lamps: SimulatedLamp[] = new Array<SimulatedLamp>(options.count);
  let next = 0;
  const worker = async () => {
    for (let n = next++; n < options.count; n = next++) {
      const deviceId = options.deviceId(n);
      lamps[n] = await SimulatedLamp.open(
        options.url,
        deviceId,
        await options.token(deviceId),
        options.keepFrames?.(n) ?? true,
      );
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, worker));
  return lamps;
}

export async function closeFleet(lamps: SimulatedLamp[], concurrency = 200): Promise<void> {
  for (let start = 0; start < lamps.length; start += concurrency)
    await Promise.all(lamps.slice(start, start + concurrency).map((lamp) => lamp.close()));
}
