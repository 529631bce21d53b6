import { hostname } from "node:os";
import { baseEnvSchema } from "../config/env-fields.js";
import { ConfigError, parseConfig } from "../config/load-config.js";
import { HealthRegistry } from "../http/health.js";
import { createServiceServer } from "../http/service-server.js";
import { createLogger } from "../logging/logger.js";
import { createMetricsRegistry } from "../metrics/registry.js";
import { RedisConnections } from "../redis/connections.js";
import { Keyspace } from "../redis/keyspace.js";
import { consumerSettingsOf } from "../streams/consumer-settings.js";
import type { RunningService, ServiceDefinition } from "./service-context.js";

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
  for (const definition of definitions) definition.checkConfig(env);

  const log = createLogger(processName, base.LOG_LEVEL);
  const metrics = createMetricsRegistry();
  const health = new HealthRegistry();
  const connections = new RedisConnections(base.REDIS_URL, log);
  const keys = new Keyspace(base.KEY_PREFIX);
  const http = await createServiceServer({ log, metrics, health });
  health.addReadiness("redis", () => connections.ping());

  const running: RunningService[] = [];
  for (const definition of definitions) {
    const context = {
      name: definition.name,
      env,
      base,
      log: log.child({ component: definition.name }),
      metrics,
      health,
      connections,
      keys,
      http,
      consumerName: base.CONSUMER_NAME ?? `${hostname()}-${process.pid}`,
      consumerSettings: consumerSettingsOf(base),
    };
    running.push(await definition.start(context));
  }
  const address = await http.listen({ host: base.HOST, port: base.PORT });
  log.info({ address, services: definitions.map((definition) => definition.name) }, "services started");

  let stopped: Promise<void> | undefined;
  const stop = () =>
    (stopped ??= (async () => {
      // Services only meet through Redis, so they drain side by side: a stop costs one blocking read, not eight.
      await Promise.all(running.map((service) => service.stop()));
      await http.close();
      await connections.close();
      health.close();
    })());
  return { url: address, stop };
}

/** Entry point helper for `main.ts` files: host, wire signals, and report a bad configuration in one line. */
export async function runMain(processName: string, definitions: ServiceDefinition[]): Promise<void> {
  let hosted: HostedServices;
  try {
    hosted = await hostServices(processName, definitions);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(78);
    }
    throw error;
  }
  const shutdown = async (signal: string) => {
    process.stderr.write(`${processName}: ${signal}, draining\n`);
    await hosted.stop();
    process.exit(0);
  };
  process.once("SIGTERM", () => void shutdown("SIGTERM"));
  process.once("SIGINT", () => void shutdown("SIGINT"));
}
