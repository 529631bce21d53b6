import type { RedisServerProcess } from "../../libs/redis/redis-server-process.js";
import { SERVICE_NAMES, type E2EStack, type ServiceName } from "../../test/e2e/stack.js";
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
  at: number;
  logTail: string;
}

/**
 * Applies the fault schedule mid-traffic: SIGKILL and restart of services, SIGKILL and restart of redis-server,
 * Lamp connection drops, long Lamp outages and withheld or late acks. A supervisor restarts any service that dies on its own (as an
 * orchestrator would) and records it, so one crash does not stall the campaign.
 */
export class FaultController {
  readonly applied: AppliedFault[] = [];
  readonly unplannedExits: UnplannedExit[] = [];
  private readonly killedOnPurpose = new Set<ServiceName>();
  private supervising = true;
  private readonly startedAt = Date.now();

  constructor(
    private readonly stack: E2EStack,
    private readonly redisServer: RedisServerProcess,
    private readonly lamps: Map<string, ChaosLamp>,
    private readonly progress: TrafficProgress,
    private readonly log: (line: string) => void,
  ) {
    for (const name of SERVICE_NAMES) void this.supervise(name);
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
      case "kill-service":
        this.killedOnPurpose.add(action.service);
        await this.stack.kill(action.service);
        await sleep(action.downMs);
        await this.stack.restart(action.service);
        this.killedOnPurpose.delete(action.service);
        return;
      case "restart-redis":
        await this.redisServer.kill();
        await sleep(action.downMs);
        await this.redisServer.restart();
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

  private async supervise(name: ServiceName): Promise<void> {
    while (this.supervising) {
      await this.stack.process(name).exit();
      if (!this.supervising) return;
      if (this.killedOnPurpose.has(name)) {
        while (this.killedOnPurpose.has(name)) await sleep(50);
        continue;
      }
      const logTail = this.stack.process(name).log.slice(-4_000);
      this.unplannedExits.push({ service: name, at: Date.now() - this.startedAt, logTail });
      this.log(`supervisor: ${name} exited on its own; restarting\n${logTail.slice(-1_500)}`);
      await this.stack.restart(name);
    }
  }

  private lamp(deviceId: string): ChaosLamp {
    const lamp = this.lamps.get(deviceId);
    if (!lamp) throw new Error(`no lamp for ${deviceId}`);
    return lamp;
  }
}
