import { randomUUID } from "node:crypto";
import type { AgentConfig } from "../../libs/contract/engine.js";
import type { HarnessDispatch } from "../../libs/contract/pipeline-payloads.js";
import { AgentKeys } from "../../libs/redis/agent-keys.js";
import type { DeliveryMarkers } from "./delivery-marker.js";
import { EngineProcess } from "./engine-process.js";
import { ClaudeStreamJsonSession } from "./protocols/claude-stream-json.js";
import type { EngineRequestAnswer } from "./protocols/engine-requests.js";
import { CodexAppServerSession } from "./protocols/codex-app-server.js";
import {
  outboundInput,
  type DispatchInput,
  type DispatchStop,
  type EngineSession,
  type Transmit,
} from "./protocols/engine-session.js";
import { RuntimeRecordLog, type RecordLogDeps } from "./runtime-record-log.js";
import { decideStop, mayJoinRunningTurn } from "./turn-ownership.js";
import { WaitingInputs, type WaitingInput } from "./waiting-inputs.js";

export interface ProcessAgentSettings {
  restartMinMs: number;
  restartMaxMs: number;
  stableMs: number;
  readyTimeoutMs: number;
}

interface Runtime {
  log: RuntimeRecordLog;
  process: EngineProcess;
  session: EngineSession;
  startedAt: number;
  ready: boolean;
}

/**
 * Keeps one engine process alive for one agent (restart with backoff after every exit, a new runtimeId per spawn)
 * and writes dispatched inputs to it with our ids as the engine's correlation ids. Every frame is recorded before
 * it is written; the delivery marker makes a redelivered dispatch write nothing twice. One engine turn never mixes
 * devices (turn-ownership.ts): another device's input waits in a durable list until the running turn has ended.
 * Dispatches, releases of waiting inputs and stops run one at a time, so each decision sees the turn as it is.
 */
export class ProcessAgent {
  private current: Runtime | undefined;
  private latestLog: RuntimeRecordLog | undefined;
  private backoffMs: number;
  private restartTimer: NodeJS.Timeout | undefined;
  private stopping = false;
  private spawnCount = 0;
  private readonly stateKey: string;
  private readonly identity: { agentId: string; machineId: string; engine: AgentConfig["engine"] };
  private readonly waiting: WaitingInputs;
  private waitingCount = 0;
  private serial: Promise<void> = Promise.resolve();

  constructor(
    private readonly deps: RecordLogDeps & { markers: DeliveryMarkers },
    private readonly agent: AgentConfig & { command: string[] },
    private readonly settings: ProcessAgentSettings,
  ) {
    this.backoffMs = settings.restartMinMs;
    const agentKeys = new AgentKeys(deps.keys, agent.agentId);
    this.stateKey = agentKeys.runnerRuntime;
    this.waiting = new WaitingInputs(deps.redis, agentKeys.runnerWaiting);
    this.identity = { agentId: agent.agentId, machineId: agent.machineId, engine: agent.engine };
  }

  async start(): Promise<void> {
    await this.closeLostRuntime();
    this.waitingCount = await this.waiting.count();
    this.spawnRuntime();
  }

  isRunning(): boolean {
    return this.current?.ready === true && this.current.process.running;
  }

  deliver(dispatch: HarnessDispatch): Promise<void> {
    return this.exclusively(async () => {
      const { agentId } = this.agent;
      const claim = await this.deps.markers.claim(agentId, dispatch.deliveryId);
      if (!claim.writable) {
        this.deps.metrics.dispatchSkipped.inc({ agent: agentId, reason: claim.state });
        return;
      }
      const runtime = await this.readyRuntime();
      if (!runtime) return this.undeliverable(dispatch, "ENGINE_NOT_RUNNING");
      if (dispatch.kind === "stop") return this.applyStop(runtime, dispatch);
      if (this.waitingCount > 0) await this.releaseWaiting(runtime);
      if (mayJoinRunningTurn(runtime.session.runningInputs(), dispatch.deviceId))
        return this.write(runtime, dispatch);
      await this.waiting.add(
        dispatch,
        this.deps.markers.key(agentId, dispatch.deliveryId),
        this.deps.markers.ttlSeconds,
      );
      this.waitingCount += 1;
      this.deps.metrics.inputsWaiting.inc({ agent: agentId });
    });
  }

  async stop(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.restartTimer);
    const runtime = this.current;
    if (!runtime) return;
    runtime.process.kill("SIGTERM");
    const forced = setTimeout(() => runtime.process.kill("SIGKILL"), 3_000);
    await runtime.process.ended;
    clearTimeout(forced);
    await runtime.log.drained();
  }

  /** A runner killed without warning leaves its last runtime open; it ended with that runner, so close it. */
  private async closeLostRuntime(): Promise<void> {
    const state = await this.deps.redis.hgetall(this.stateKey);
    if (!state.runtimeId) return;
    const log = new RuntimeRecordLog(
      this.deps,
      this.identity,
      state.runtimeId,
      this.stateKey,
      Number(state.seq ?? 0),
    );
    await log.append({ type: "runtime_exited", code: null, signal: null }, "clear");
    this.deps.log.info(
      { agentId: this.agent.agentId, runtimeId: state.runtimeId },
      "closed runtime lost with the previous runner",
    );
  }

  private spawnRuntime(): void {
    if (this.stopping) return;
    if (this.spawnCount++ > 0) this.deps.metrics.engineRestarts.inc({ agent: this.agent.agentId });
    const log = new RuntimeRecordLog(this.deps, this.identity, randomUUID(), this.stateKey);
    const transmit: Transmit = async (raw, input) => {
      await log.append({ type: "outbound", raw, ...(input ? { input } : {}) });
      engine.write(raw);
    };
    const hooks = {
      transmit,
      turnEnded: () => void this.exclusively(() => this.releaseWaiting(runtime)),
      requestAnswered: (answer: EngineRequestAnswer) => this.requestAnswered(answer),
    };
    const approvals = this.agent.approvals ?? "deny";
    const session: EngineSession =
      this.agent.engine === "codex-app-server"
        ? new CodexAppServerSession(hooks, approvals)
        : new ClaudeStreamJsonSession(hooks, approvals);
    const engine = new EngineProcess(this.agent.command, {
      line: (line) => {
        void log.append({ type: "inbound", raw: line });
        session.observe(line);
      },
      stderr: (text) =>
        this.deps.log.debug({ agentId: this.agent.agentId, stderr: text.slice(0, 2_000) }, "engine stderr"),
      closed: (exit) => void this.runtimeEnded(runtime, exit),
    });
    const runtime: Runtime = { log, process: engine, session, startedAt: Date.now(), ready: false };
    if (engine.pid === undefined) return;
    this.current = runtime;
    this.latestLog = log;
    void log.append({ type: "runtime_started", pid: engine.pid });
    session.start().then(
      () => {
        runtime.ready = true;
        void this.exclusively(() => this.releaseWaiting(runtime));
      },
      (error: unknown) =>
        this.deps.log.warn({ agentId: this.agent.agentId, err: String(error) }, "engine handshake failed"),
    );
  }

  private async runtimeEnded(
    runtime: Runtime,
    exit: { code: number | null; signal: string | null; spawned: boolean; error?: string },
  ): Promise<void> {
    if (this.current === runtime) this.current = undefined;
    if (exit.spawned)
      await runtime.log.append({ type: "runtime_exited", code: exit.code, signal: exit.signal }, "clear");
    this.deps.log.info({ agentId: this.agent.agentId, ...exit }, "engine runtime ended");
    if (this.stopping) return;
    if (Date.now() - runtime.startedAt >= this.settings.stableMs) this.backoffMs = this.settings.restartMinMs;
    const delay = this.backoffMs;
    this.backoffMs = Math.min(this.backoffMs * 2, this.settings.restartMaxMs);
    this.restartTimer = setTimeout(() => this.spawnRuntime(), delay);
  }

  private requestAnswered(answer: EngineRequestAnswer): void {
    const { kind, decision, method } = answer;
    this.deps.metrics.requestsAnswered.inc({ agent: this.agent.agentId, kind, decision });
    this.deps.log.info({ agentId: this.agent.agentId, kind, decision, method }, "engine request answered");
  }

  private exclusively(work: () => Promise<void>): Promise<void> {
    const done = this.serial.then(work);
    this.serial = done.catch(() => undefined);
    return done;
  }

  private async write(runtime: Runtime, dispatch: HarnessDispatch): Promise<void> {
    const { agentId } = this.agent;
    const frame =
      dispatch.kind === "input"
        ? await runtime.session.inputFrame(dispatch)
        : runtime.session.stopFrame(dispatch);
    await runtime.log.append({
      type: "outbound",
      raw: frame.raw,
      input: outboundInput(dispatch, frame.mode),
    });
    await this.deps.markers.advance(agentId, dispatch.deliveryId, "recorded");
    runtime.process.write(frame.raw);
    await this.deps.markers.advance(agentId, dispatch.deliveryId, "written");
    this.deps.metrics.inputsWritten.inc({ agent: agentId, kind: dispatch.kind, mode: frame.mode });
  }

  private async undeliverable(dispatch: HarnessDispatch, reason: string, code?: string): Promise<void> {
    const log = this.latestLog ?? new RuntimeRecordLog(this.deps, this.identity, randomUUID(), this.stateKey);
    await log.append({
      type: "undeliverable",
      deliveryId: dispatch.deliveryId,
      deviceId: dispatch.deviceId,
      idempotencyKey: dispatch.idempotencyKey,
      reason,
      ...(code === undefined ? {} : { code }),
    });
    await this.deps.markers.advance(this.agent.agentId, dispatch.deliveryId, "undeliverable");
    this.deps.metrics.undeliverable.inc({ agent: this.agent.agentId, reason });
  }

  /** Writes waiting inputs in arrival order while each may join the running turn (the first starts a new one). */
  private async releaseWaiting(runtime: Runtime): Promise<void> {
    if (this.waitingCount === 0 || this.current !== runtime) return;
    const entries = await this.waiting.list();
    this.waitingCount = entries.length;
    for (const entry of entries) {
      if (await this.deps.markers.releasable(this.agent.agentId, entry.input.deliveryId)) {
        if (!mayJoinRunningTurn(runtime.session.runningInputs(), entry.input.deviceId)) return;
        await this.write(runtime, entry.input);
      }
      await this.dropWaiting(entry);
    }
  }

  private async dropWaiting(entry: WaitingInput): Promise<void> {
    await this.waiting.remove(entry);
    this.waitingCount = Math.max(0, this.waitingCount - 1);
  }

  private async applyStop(runtime: Runtime, stop: DispatchStop): Promise<void> {
    const waiting = this.waitingCount > 0 ? await this.waiting.list() : [];
    const decision = decideStop(
      stop,
      runtime.session.consumedInputs(),
      waiting.map((entry) => entry.input),
    );
    this.deps.metrics.stops.inc({ agent: this.agent.agentId, action: decision.action });
    if (decision.action === "interrupt") return this.write(runtime, stop);
    if (decision.action === "refuse") return this.undeliverable(stop, decision.reason, "STOP_NOT_APPLICABLE");
    await this.withdraw(
      runtime,
      stop,
      waiting.filter((entry) => decision.inputs.includes(entry.input)),
    );
  }

  /** Markers first, then the record, then the list: a crash anywhere leaves the stop to be redelivered and redone. */
  private async withdraw(runtime: Runtime, stop: DispatchStop, entries: WaitingInput[]): Promise<void> {
    const { agentId } = this.agent;
    for (const { input } of entries) await this.deps.markers.advance(agentId, input.deliveryId, "withdrawn");
    await runtime.log.append({
      type: "withdrawn",
      stop: inputRef(stop),
      inputs: entries.map(({ input }) => inputRef(input)),
    });
    await this.deps.markers.advance(agentId, stop.deliveryId, "withdrawn");
    for (const entry of entries) await this.dropWaiting(entry);
  }

  private async readyRuntime(): Promise<Runtime | undefined> {
    const deadline = Date.now() + this.settings.readyTimeoutMs;
    while (!this.isRunning()) {
      if (Date.now() > deadline || this.stopping) return undefined;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return this.current;
  }
}

function inputRef(dispatch: DispatchInput | DispatchStop) {
  return {
    deliveryId: dispatch.deliveryId,
    deviceId: dispatch.deviceId,
    idempotencyKey: dispatch.idempotencyKey,
  };
}
