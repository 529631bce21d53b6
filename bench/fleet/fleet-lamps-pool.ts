import { signToken } from "../../libs/auth/tokens.js";
import { BenchLamp, type BenchLampEvents } from "../e2e/bench-lamp.js";
import { BENCH_SECRET } from "../e2e/lampline-stack.js";

const CONNECT_CONCURRENCY = 100;

/** Device n of the bench's fleet. */
export const fleetDeviceId = (n: number) => `fleet-lamp-${n + 1}`;

/**
 * Connects Lamps `from`…`to − 1` over the real device-gateway WebSocket, CONNECT_CONCURRENCY at a time, each with
 * its own device token. Every Lamp acks its playbacks; only the ones the load generator is given ever ask.
 */
export async function connectLamps(
  url: string,
  from: number,
  to: number,
  events: BenchLampEvents,
): Promise<BenchLamp[]> {
  const lamps = new Array<BenchLamp>(to - from);
  let next = from;
  const worker = async () => {
    for (let n = next++; n < to; n = next++) {
      const token = await signToken(BENCH_SECRET, {
        audience: "os",
        sub: fleetDeviceId(n),
        role: "device",
        expiresInSeconds: 24 * 3600,
      });
      lamps[n - from] = await BenchLamp.connect(url, token, events);
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONNECT_CONCURRENCY, to - from) }, worker));
  return lamps;
}
