import { createServer } from "node:net";
import { hostname } from "node:os";
import { z } from "zod";
import { baseEnvSchema } from "../config/env-fields.js";
import { ConfigError, parseConfig } from "../config/load-config.js";
import { HealthRegistry } from "../http/health.js";
import { answerUnavailableWhileRedisDown } from "../http/redis-unavailable.js";
import { createServiceServer } from "../http/service-server.js";
import { createLogger } from "../logging/logger.js";
import { ProcessMetrics } from "../metrics/process-metrics.js";
import { errorMessage } from "../errors/error-message.js";
import type { Logger } from "../logging/logger.js";
import { RedisConnections } from "../redis/connections.js";
import { isRedisUnavailableError } from "../redis/redis-errors.js";
import { OutageLogFilter } from "../redis/outage-log-filter.js";
import { Keyspace } from "../redis/keyspace.js";
import { consumerSettingsOf } from "../config/consumer-settings.js";
import type { RunningService, ServiceDefinition } from "./service-context.js";
import { hostSettingsOf } from "./host-settings.js";
import { drainOnSignals } from "./shutdown.js";

/** The HTTP port is taken: one line for the operator, and nothing of this host is left running. */
export class PortInUseError extends Error {}

const addressInUse = z.object({ code: z.literal("EADDRINUSE") });

/**
 * Fails with PortInUseError when the HTTP port is taken, before anything is started: a second `npm start` says so at
 * once. (The listen itself can still lose a race; hostServices then stops what it started and throws the same.)
 */
export async function ensurePortFree(processName: string, host: string, port: number): Promise<void> {
  if (port === 0) return;
  const probe = createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once("error", reject);
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve()));
  }).catch((error: unknown) => {
    if (!addressInUse.safeParse(error).success) throw error;
    throw portInUse(processName, host, port);
  });
}

function portInUse(processName: string, host: string, port: number): PortInUseError {
  return new PortInUseError(`${processName}: port ${port} on ${host} is already in use (set PORT)`);
}

export interface HostedServices {
  url: string;
  stop(): Promise<void>;
}

/**
 * Runs one or more services in this process behind one HTTP port: configuration is checked for all of them before
 * anything starts, and SIGTERM/SIGINT drain them together (stop reading, finish in-flight work, exit).
 */
export async function hostServices(
  processName: string,
  definitions: ServiceDefinition[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<HostedServices> {
  const base = parseConfig(baseEnvSchema, env);
  const settings = hostSettingsOf(env);
  for (const definition of definitions) definition.checkConfig(env);
  await ensurePortFree(processName, base.HOST, base.PORT);

  const outageLog = new OutageLogFilter();
  const log = createLogger(processName, base.LOG_LEVEL, outageLog.hooks);
  const metrics = new ProcessMetrics(processName);
  const health = new HealthRegistry();
  const connections = new RedisConnections(base.REDIS_URL, log, {
    commandTimeoutMs: settings.REDIS_COMMAND_TIMEOUT_MS,
    outageLog,
    clusterNodes: base.REDIS_CLUSTER_NODES,
  });
  const keys = new Keyspace(base.KEY_PREFIX, base.STREAM_PARTITIONS);
  const http = await createServiceServer({ log, metrics, health });
  answerUnavailableWhileRedisDown(http, connections);
  health.addReadiness("redis", () => connections.ping());
  // Services start by writing (consumer groups, scripts): they wait for Redis rather than fail on a cold start.
  await connections.untilAvailable();

  const running: RunningService[] = [];
  for (const definition of definitions) {
    const context = {
      name: definition.name,
      env,
      base,
      log: log.child({ component: definition.name }),
      metrics: metrics.forService(definition.name),
      health,
      connections,
      keys,
      http,
      consumerName: base.CONSUMER_NAME ?? `${hostname()}-${process.pid}`,
      consumerSettings: consumerSettingsOf(base),
    };
    running.push(await definition.start(context));
  }
  let stopped: Promise<void> | undefined;
  const stop = () =>
    (stopped ??= (async () => {
      if (!connections.available) connections.abandonBlockedReads();
      // Services only meet through Redis, so they drain side by side: a stop costs one blocking read, not eight.
      const stops = await Promise.allSettled(running.map((service) => service.stop()));
      await http.close();
      await connections.close();
      health.close();
      throwUnlessOnlyRedisWasAway(stops, definitions, log);
    })());
  const address = await http.listen({ host: base.HOST, port: base.PORT }).catch(async (error: unknown) => {
    if (!addressInUse.safeParse(error).success) throw error;
    await stop();
    throw portInUse(processName, base.HOST, base.PORT);
  });
  log.info({ address, services: definitions.map((definition) => definition.name) }, "services started");
  return { url: address, stop };
}

/**
 * A stop that failed because Redis is away (a last presence write, a heartbeat delete) is logged and the stop goes
 * on: what it would have written expires or is redone at the next start. Any other failure fails the stop.
 */
function throwUnlessOnlyRedisWasAway(
  stops: PromiseSettledResult<void>[],
  definitions: ServiceDefinition[],
  log: Logger,
): void {
  const failures: { service: string | undefined; error: unknown }[] = stops.flatMap((stop, index) =>
    stop.status === "rejected" ? [{ service: definitions[index]?.name, error: stop.reason }] : [],
  );
  for (const { service, error } of failures)
    log.warn({ service, reason: errorMessage(error) }, "service stop incomplete");
  const unexpected = failures.find(({ error }) => !isRedisUnavailableError(error));
  if (unexpected) throw unexpected.error;
}

/** Entry point helper for `main.ts` files: host, drain on signals, and report a bad start in one line. */
export async function runMain(processName: string, definitions: ServiceDefinition[]): Promise<void> {
  try {
    const { SHUTDOWN_TIMEOUT_MS } = hostSettingsOf(process.env);
    const started: { hosted?: HostedServices } = {};
    drainOnSignals(processName, async () => started.hosted?.stop(), SHUTDOWN_TIMEOUT_MS);
    started.hosted = await hostServices(processName, definitions);
  } catch (error) {
    exitOnStartupError(error);
  }
}

/** A bad configuration exits 78 (EX_CONFIG), a taken port 1, each as one line on stderr; anything else is thrown. */
export function exitOnStartupError(error: unknown): never {
  if (!(error instanceof ConfigError || error instanceof PortInUseError)) throw error;
  process.stderr.write(`${error.message}\n`);
  process.exit(error instanceof ConfigError ? 78 : 1);
}
