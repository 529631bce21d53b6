import type { FastifyInstance } from "fastify";
import type { Registry } from "prom-client";
import type { BaseEnv } from "../config/env-fields.js";
import type { HealthRegistry } from "../http/health.js";
import type { Logger } from "../logging/logger.js";
import type { RedisConnections } from "../redis/connections.js";
import type { Keyspace } from "../redis/keyspace.js";
import type { StreamConsumerSettings } from "../config/consumer-settings.js";

/** What a service gets from its host process, whether it runs alone or inside the all-in-one process. */
export interface ServiceContext {
  name: string;
  env: NodeJS.ProcessEnv;
  base: BaseEnv;
  log: Logger;
  metrics: Registry;
  health: HealthRegistry;
  connections: RedisConnections;
  keys: Keyspace;
  http: FastifyInstance;
  /** Stable per process and service; consumers of one group must have distinct names. */
  consumerName: string;
  consumerSettings: StreamConsumerSettings;
}

export interface RunningService {
  stop(): Promise<void>;
}

export interface ServiceDefinition {
  name: string;
  /** Parses and checks the service's own configuration without side effects; throws ConfigError when wrong. */
  checkConfig(env: NodeJS.ProcessEnv): void;
  start(context: ServiceContext): Promise<RunningService>;
}

/**
 * A service definition from its configuration parser and its start: the parser checks the environment at boot
 * (nothing started yet) and its result is what `start` receives, so no service parses its own config twice in code.
 */
export function defineService<Config>(service: {
  name: string;
  config: (env: NodeJS.ProcessEnv) => Config;
  start: (context: ServiceContext, config: Config) => Promise<RunningService>;
}): ServiceDefinition {
  return {
    name: service.name,
    checkConfig: (env) => void service.config(env),
    start: (context) => service.start(context, service.config(context.env)),
  };
}
