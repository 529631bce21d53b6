import { sampleProcess } from "../e2e/process-sampler.js";
import type { FleetRedis } from "./fleet-redis.js";
import { socketOwners } from "./process-sockets.js";
import { routerLeaseFigures, type RouterLeaseFigures } from "./service-metrics.js";

/** The stack as one phase of the fleet bench leaves it. */
export interface FleetSnapshot {
  phase: string;
  /** Lamps connected. */
  devices: number;
  redisClients: {
    total: number;
    /** By connection name (`lampline:<purpose>` without the prefix; `unnamed` for none). */
    byPurpose: Record<string, number>;
    /** By the service process holding the socket (`other` for none of the stack's). */
    byProcess: Record<string, number>;
  };
  /** Resident memory of each service process. */
  rssBytes: Record<string, number>;
  redisUsedMemory: number;
  /** Commands Redis processed per second over IDLE_WINDOW_MS with no load offered (background work only). */
  idleCommandsPerSecond: number | null;
  /** The commands of that window per second, the busiest first (the observer's INFO left out). */
  idleTopCommands: Record<string, number> | null;
  routers: Record<string, RouterLeaseFigures>;
}

const IDLE_WINDOW_MS = 10_000;

export interface SnapshotSources {
  redis: FleetRedis;
  /** Service process name → pid. */
  services: () => Map<string, number>;
  /** Router process name → its HTTP base URL. */
  routers: Map<string, string>;
}

export async function takeSnapshot(
  sources: SnapshotSources,
  phase: string,
  devices: number,
  options: { idleWindow: boolean },
): Promise<FleetSnapshot> {
  const services = sources.services();
  let idleCommandsPerSecond: number | null = null;
  let idleTopCommands: Record<string, number> | null = null;
  if (options.idleWindow) {
    const before = await sources.redis.snapshot();
    const startedAt = performance.now();
    await new Promise((resolve) => setTimeout(resolve, IDLE_WINDOW_MS));
    const after = await sources.redis.snapshot();
    const seconds = (performance.now() - startedAt) / 1000;
    idleCommandsPerSecond = Math.round((after.commandsProcessed - before.commandsProcessed) / seconds);
    idleTopCommands = Object.fromEntries(
      Object.entries(after.calls)
        .filter(([name]) => name !== "info")
        .map(([name, calls]) => [name, Math.round((calls - (before.calls[name] ?? 0)) / seconds)] as const)
        .filter(([, perSecond]) => perSecond > 0)
        .sort(([, a], [, b]) => b - a)
        .slice(0, 6),
    );
  }
  const clients = await sources.redis.clients();
  const owners = socketOwners([...services.values()]);
  const nameOfPid = new Map([...services].map(([name, pid]) => [pid, name]));
  const byPurpose: Record<string, number> = {};
  const byProcess: Record<string, number> = {};
  for (const client of clients) {
    const purpose = client.name.startsWith("lampline:") ? client.name.slice("lampline:".length) : "unnamed";
    byPurpose[purpose] = (byPurpose[purpose] ?? 0) + 1;
    const pid = owners.get(`${client.addr}|${client.laddr}`);
    const process = (pid !== undefined && nameOfPid.get(pid)) || "other";
    byProcess[process] = (byProcess[process] ?? 0) + 1;
  }
  const rssBytes: Record<string, number> = {};
  for (const [name, pid] of services) rssBytes[name] = sampleProcess(pid)?.rssBytes ?? 0;
  const routers: Record<string, RouterLeaseFigures> = {};
  for (const [name, url] of sources.routers) routers[name] = await routerLeaseFigures(url);
  return {
    phase,
    devices,
    redisClients: { total: clients.length, byPurpose: sorted(byPurpose), byProcess: sorted(byProcess) },
    rssBytes,
    redisUsedMemory: (await sources.redis.snapshot()).usedMemory,
    idleCommandsPerSecond,
    idleTopCommands,
    routers,
  };
}

function sorted(counts: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(counts).sort(([a], [b]) => a.localeCompare(b)));
}
