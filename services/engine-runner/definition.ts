import { parseConfig } from "../../libs/config/load-config.js";
import { STREAM_CATALOG } from "../../libs/contract/catalog.js";
import { defineService } from "../../libs/service/service-context.js";
import { startServiceConsumer } from "../../libs/service/service-consumer.js";
import { loadAgentsFile } from "./agents-file.js";
import { engineRunnerEnvSchema } from "./config.js";
import { DeliveryMarkers } from "./delivery-marker.js";
import { DispatchRouter, type HostedAgent } from "./dispatch-router.js";
import { ProcessAgent } from "./process-agent.js";
import { RunnerMetrics } from "./runner-metrics.js";
import { TranscriptAgent } from "./transcript-agent.js";

/** Hosts the engines of one machine: `harness.dispatch` in, `engine.records` out (raw frames, untouched). */
export const engineRunnerService = defineService({
  name: "engine-runner",

  config(env) {
    const config = parseConfig(engineRunnerEnvSchema, env);
    return { config, ...loadAgentsFile(config.AGENTS_FILE, config.MACHINE_ID) };
  },

  async start(ctx, { config, machineId, agents }) {
    const metrics = RunnerMetrics.of(ctx.metrics);
    metrics.initialiseAgents(agents.map((agent) => agent.agentId));
    const deps = {
      redis: ctx.connections.command,
      keys: ctx.keys,
      metrics,
      log: ctx.log,
      markers: new DeliveryMarkers(ctx.connections.command, ctx.keys, config.DELIVERY_MARKER_TTL_SECONDS),
    };
    const hosted = new Map<string, HostedAgent>();
    for (const agent of agents) {
      const host =
        agent.path !== undefined && (agent.engine === "claude-transcript" || agent.engine === "codex-rollout")
          ? new TranscriptAgent(deps, { ...agent, path: agent.path }, config.TRANSCRIPT_POLL_MS)
          : new ProcessAgent(
              deps,
              { ...agent, command: agent.command ?? [] },
              {
                restartMinMs: config.ENGINE_RESTART_MIN_MS,
                restartMaxMs: config.ENGINE_RESTART_MAX_MS,
                stableMs: config.ENGINE_STABLE_MS,
                readyTimeoutMs: config.DISPATCH_READY_TIMEOUT_MS,
              },
            );
      await host.start();
      hosted.set(agent.agentId, host);
    }

    const router = new DispatchRouter(machineId, hosted, metrics);
    const consumer = await startServiceConsumer(ctx, {
      stream: STREAM_CATALOG.harnessDispatch,
      group: STREAM_CATALOG.harnessDispatch.consumers.engineRunner(machineId).group,
      handle: (entry) => router.handle(entry.payload),
      ownerOf: (payload) => payload.agentId,
    });
    ctx.health.addReadiness("agents", async () => [...hosted.values()].every((agent) => agent.isRunning()));
    ctx.log.info({ machineId, agents: [...hosted.keys()] }, "engine-runner hosting agents");

    return {
      async stop() {
        await consumer.stop();
        await Promise.all([...hosted.values()].map((agent) => agent.stop()));
      },
    };
  },
});
