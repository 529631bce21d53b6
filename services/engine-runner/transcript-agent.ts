import { randomUUID } from "node:crypto";
import { open, stat } from "node:fs/promises";
import type { AgentConfig } from "../../libs/contract/engine.js";
import type { HarnessDispatch } from "../../libs/contract/pipeline-payloads.js";
import { errorMessage } from "../../libs/errors/error-message.js";
import { AgentKeys } from "../../libs/redis/agent-keys.js";
import type { DeliveryMarkers } from "./delivery-marker.js";
import { RuntimeRecordLog, type RecordLogDeps } from "./runtime-record-log.js";

const NEWLINE = 0x0a;

/**
 * Follows the session file of an engine that runs interactively elsewhere (`claude-transcript`, `codex-rollout`).
 * Each complete new line becomes one inbound record; the byte offset after it is persisted in the same pipeline
 * as the record, so a restart neither skips nor re-reads a row, and a partial last line waits until it is whole.
 * One followed file is one runtime. Dispatched inputs are recorded as handed over: the runner writes nothing.
 */
export class TranscriptAgent {
  private log: RuntimeRecordLog | undefined;
  private offset = 0;
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> = Promise.resolve();
  private stopping = false;
  private readonly stateKey: string;
  private readonly identity: { agentId: string; machineId: string; engine: AgentConfig["engine"] };

  constructor(
    private readonly deps: RecordLogDeps & { markers: DeliveryMarkers },
    private readonly agent: AgentConfig & { path: string },
    private readonly pollMs: number,
  ) {
    this.stateKey = new AgentKeys(deps.keys, agent.agentId).runnerTail;
    this.identity = { agentId: agent.agentId, machineId: agent.machineId, engine: agent.engine };
  }

  async start(): Promise<void> {
    const state = await this.deps.redis.hgetall(this.stateKey);
    if (state.runtimeId && state.path === this.agent.path) {
      this.log = new RuntimeRecordLog(
        this.deps,
        this.identity,
        state.runtimeId,
        this.stateKey,
        Number(state.seq),
      );
      this.offset = Number(state.offset ?? 0);
    } else {
      await this.beginRuntime();
    }
    this.schedule(0);
  }

  isRunning(): boolean {
    return this.log !== undefined && !this.stopping;
  }

  async deliver(dispatch: HarnessDispatch): Promise<void> {
    const { agentId } = this.agent;
    const log = this.log as RuntimeRecordLog;
    const claim = await this.deps.markers.claim(agentId, dispatch.deliveryId);
    if (!claim.writable) {
      this.deps.metrics.dispatchSkipped.inc({ agent: agentId, reason: claim.state });
      return;
    }
    const ref = {
      deliveryId: dispatch.deliveryId,
      deviceId: dispatch.deviceId,
      idempotencyKey: dispatch.idempotencyKey,
    };
    if (dispatch.kind === "stop") {
      const reason = "STOP_UNSUPPORTED_FOR_TRANSCRIPT_AGENT";
      await log.append({ type: "undeliverable", ...ref, reason });
      await this.deps.markers.advance(agentId, dispatch.deliveryId, "undeliverable");
      this.deps.metrics.undeliverable.inc({ agent: agentId, reason });
      return;
    }
    await log.append({ type: "handed_over", ...ref, text: dispatch.text, mode: "native_input" });
    await this.deps.markers.advance(agentId, dispatch.deliveryId, "handed_over");
    this.deps.metrics.inputsWritten.inc({ agent: agentId, kind: "input", mode: "native_input" });
  }

  async stop(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.timer);
    await this.polling;
    await this.log?.drained();
  }

  private async beginRuntime(): Promise<void> {
    this.log = new RuntimeRecordLog(this.deps, this.identity, randomUUID(), this.stateKey);
    this.offset = 0;
    await this.log.append({ type: "runtime_started" }, { offset: 0, path: this.agent.path });
  }

  private schedule(delayMs: number): void {
    if (this.stopping) return;
    this.timer = setTimeout(() => {
      this.polling = this.poll()
        .catch((error: unknown) =>
          this.deps.log.warn(
            { agentId: this.agent.agentId, err: errorMessage(error) },
            "transcript read failed",
          ),
        )
        .finally(() => this.schedule(this.pollMs));
    }, delayMs);
  }

  private async poll(): Promise<void> {
    let size: number;
    try {
      size = (await stat(this.agent.path)).size;
    } catch {
      return;
    }
    if (size < this.offset) {
      // The file was replaced or truncated: what we followed has ended; the new content is a new runtime.
      await this.log?.append({ type: "runtime_exited", code: null, signal: null }, "clear");
      await this.beginRuntime();
    }
    if (size === this.offset) return;
    const file = await open(this.agent.path, "r");
    try {
      const buffer = Buffer.alloc(size - this.offset);
      const { bytesRead } = await file.read(buffer, 0, buffer.length, this.offset);
      await this.consume(buffer.subarray(0, bytesRead));
    } finally {
      await file.close();
    }
  }

  private async consume(chunk: Buffer): Promise<void> {
    const log = this.log as RuntimeRecordLog;
    let start = 0;
    for (let end = chunk.indexOf(NEWLINE); end >= 0 && !this.stopping; end = chunk.indexOf(NEWLINE, start)) {
      const line = chunk.subarray(start, end).toString("utf8").replace(/\r$/, "");
      start = end + 1;
      const offset = this.offset + start;
      if (line.trim() === "") continue;
      await log.append({ type: "inbound", raw: line }, { offset, path: this.agent.path });
    }
    this.offset += start;
  }
}
