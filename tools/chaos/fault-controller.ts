import type { RedisClusterProcess } from "../../libs/redis/redis-cluster-process.js";
import type { RedisServerProcess } from "../../libs/redis/redis-server-process.js";
import type { E2EStack, ServiceName } from "../../test/e2e/stack.js";
import { describeFault, type FaultTrack, type PlannedFault } from "./campaign-plan.js";
import type { ChaosLamp } from "./chaos-lamp.js";
import type { TrafficProgress } from "./traffic.js";
import { sleep } from "../../libs/timing/sleep.js";

export interface AppliedFault {
  index: number;
  description: string;
  /** Milliseconds since the campaign started. */
  firedAt: number;
  endedAt: number;
}

/** A service process that died without being killed by the schedule (the supervisor restarted it). */
export interface UnplannedExit {
  service: ServiceName;
  replica: number;
  at: number;
  logTail: string;
}

/** What the campaign's Redis is: one redis-server, or a Redis Cluster (its faults restart one node). */
export type CampaignRedis =
  { kind: "server"; server: RedisServerProcess } | { kind: "cluster"; cluster: RedisClusterProcess };

/**
 * Applies the fault schedule mid-traffic: SIGKILL and restart of service replicas, SIGSTOP/SIGCONT pauses of them,
 * SIGKILL and restart of redis-server or of one Redis Cluster node, Redis held at `maxmemory`,
 * Lamp connection drops, long Lamp outages and withheld or late acks. A supervisor restarts any service that dies on its own (as an
 * orchestrator would) and records it, so one crash does not stall the campaign.
 */
export class FaultController {
  readonly applied: AppliedFault[] = [];
  readonly unplannedExits: UnplannedExit[] = [];
  /** `<service>#<replica>` of the processes the schedule has down. */
  private readonly killedOnPurpose = new Set<string>();
  private supervising = true;
  private readonly startedAt = Date.now();

  constructor(
    private readonly stack: E2EStack,
    private readonly redis: CampaignRedis,
    private readonly lamps: Map<string, ChaosLamp>,
    private readonly progress: TrafficProgress,
    private readonly log: (line: string) => void,
  ) {
    for (const [name, replica] of stack.instances()) void this.supervise(name, replica);
  }

  /** Runs the schedule; resolves when every fault has fired and ended. */
  async run(faults: PlannedFault[]): Promise<void> {
    const tracks = new Map<FaultTrack, PlannedFault[]>();
    for (const fault of faults) tracks.set(fault.track, [...(tracks.get(fault.track) ?? []), fault]);
    await Promise.all([...tracks.values()].map((track) => this.runTrack(track)));
  }

  stopSupervising(): void {
    this.supervising = false;
  }

  private async runTrack(faults: PlannedFault[]): Promise<void> {
    for (const fault of faults) {
      await this.progress.reached(fault.afterTurn);
      await sleep(fault.delayMs);
      const firedAt = Date.now() - this.startedAt;
      this.log(`fault ${fault.index}: ${describeFault(fault)}`);
      await this.apply(fault);
      this.applied.push({
        index: fault.index,
        description: describeFault(fault),
        firedAt,
        endedAt: Date.now() - this.startedAt,
      });
    }
  }

  private async apply(fault: PlannedFault): Promise<void> {
    const action = fault.action;
    switch (action.kind) {
      case "kill-service": {
        const id = `${action.service}#${action.replica}`;
        this.killedOnPurpose.add(id);
        await this.stack.kill(action.service, "SIGKILL", action.replica);
        await sleep(action.downMs);
        await this.stack.restart(action.service, action.replica);
        this.killedOnPurpose.delete(id);
        return;
      }
      case "restart-redis":
        await this.restartRedis(action.downMs, action.node);
        return;
      case "squeeze-redis": {
        const squeeze = await this.redisServer(action.node).squeezeMemory();
        await sleep(action.holdMs);
        await squeeze.release();
        return;
      }
      case "pause-service":
        await this.pauseService(action.service, action.replica, action.pausedMs);
        return;
      case "lamp-drop":
        this.lamp(action.deviceId).disconnect(action.downMs, "drop");
        await sleep(action.downMs);
        return;
      case "lamp-outage":
        this.lamp(action.deviceId).disconnect(action.downMs, action.ending);
        await sleep(action.downMs);
        return;
      case "lamp-ack-late":
        this.lamp(action.deviceId).setAckPolicy({ mode: "late", delayMs: action.delayMs });
        await sleep(action.windowMs);
        this.lamp(action.deviceId).setAckPolicy({ mode: "prompt" });
        return;
      case "lamp-no-ack":
        this.lamp(action.deviceId).setAckPolicy({ mode: "never" });
        await sleep(action.windowMs);
        this.lamp(action.deviceId).setAckPolicy({ mode: "prompt" });
        return;
    }
  }

  /** The redis-server, or the Redis Cluster master `node`. */
  private redisServer(node: number | undefined): RedisServerProcess {
    if (this.redis.kind === "server") return this.redis.server;
    if (node === undefined) throw new Error("a Redis Cluster fault names no node");
    return this.redis.cluster.node(node);
  }

  /** The whole process group stops (node and whatever it runs), as a frozen VM would; nothing is killed. */
  private async pauseService(name: ServiceName, replica: number, pausedMs: number): Promise<void> {
    const pid = this.stack.process(name, replica).pid;
    if (pid === undefined) throw new Error(`${name}#${replica} has no process to pause`);
    process.kill(-pid, "SIGSTOP");
    try {
      await sleep(pausedMs);
    } finally {
      process.kill(-pid, "SIGCONT");
    }
  }

  private async restartRedis(downMs: number, node: number | undefined): Promise<void> {
    if (this.redis.kind === "server") {
      await this.redis.server.kill();
      await sleep(downMs);
      await this.redis.server.restart();
      return;
    }
    if (node === undefined) throw new Error("a Redis Cluster fault names no node");
    await this.redis.cluster.kill(node);
    await sleep(downMs);
    await this.redis.cluster.restart(node);
  }

  private async supervise(name: ServiceName, replica: number): Promise<void> {
    const id = `${name}#${replica}`;
    while (this.supervising) {
      await this.stack.process(name, replica).exit();
      if (!this.supervising) return;
      if (this.killedOnPurpose.has(id)) {
        while (this.killedOnPurpose.has(id)) await sleep(50);
        continue;
      }
      const logTail = this.stack.process(name, replica).log.slice(-4_000);
      this.unplannedExits.push({ service: name, replica, at: Date.now() - this.startedAt, logTail });
      this.log(`supervisor: ${id} exited on its own; restarting\n${logTail.slice(-1_500)}`);
      await this.stack.restart(name, replica);
    }
  }

  private lamp(deviceId: string): ChaosLamp {
    const lamp = this.lamps.get(deviceId);
    if (!lamp) throw new Error(`no lamp for ${deviceId}`);
    return lamp;
  }
}
