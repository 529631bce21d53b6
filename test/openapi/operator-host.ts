import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FastifyInstance, RouteOptions } from "fastify";
import { signToken } from "../../libs/auth/tokens.js";
import { baseEnvSchema } from "../../libs/config/env-fields.js";
import { parseConfig } from "../../libs/config/load-config.js";
import { HealthRegistry } from "../../libs/http/health.js";
import { createServiceServer } from "../../libs/http/service-server.js";
import { createMetricsRegistry } from "../../libs/metrics/registry.js";
import { RedisConnections } from "../../libs/redis/connections.js";
import type { RunningService } from "../../libs/service/service-context.js";
import { consumerSettingsOf } from "../../libs/config/consumer-settings.js";
import { consoleService } from "../../services/console/definition.js";
import { deviceGatewayService } from "../../services/device-gateway/definition.js";
import { harnessGatewayService } from "../../services/harness-gateway/definition.js";
import { routerService } from "../../services/router/definition.js";
import { runResolverService } from "../../services/run-resolver/definition.js";
import { ttsDispatcherService } from "../../services/tts-dispatcher/definition.js";
import { createTestRedis, testLog, type TestRedis } from "../helpers/test-redis.js";

export const OS_SECRET = "operator-test-secret-0123456789abcdef";
export const HARNESS_SECRET = "operator-test-harness-0123456789abcdef";

/** A route as Fastify announced it (onRoute), for checking the OpenAPI document against what is really served. */
export interface AnnouncedRoute {
  method: string;
  url: string;
  hidden: boolean;
}

/**
 * The OS services, the console and the harness-gateway on one server, as the all-in-one hosts them (the engine-side services add
 * only the probes), with every route they register recorded.
 */
export class OperatorHost {
  private constructor(
    readonly t: TestRedis,
    readonly http: FastifyInstance,
    readonly routes: AnnouncedRoute[],
    private readonly running: RunningService[],
    private readonly connections: RedisConnections,
    private readonly health: HealthRegistry,
  ) {}

  static async start(label: string): Promise<OperatorHost> {
    const t = createTestRedis(label);
    const agentsFile = join(mkdtempSync(join(tmpdir(), "agents-")), "agents.json");
    writeFileSync(agentsFile, JSON.stringify([]));
    const env = {
      REDIS_URL: t.url,
      KEY_PREFIX: t.keys.prefix,
      STREAM_PARTITIONS: String(t.keys.partitions),
      LOG_LEVEL: "silent",
      AUTH_JWT_SECRET: OS_SECRET,
      HARNESS_JWT_SECRET: HARNESS_SECRET,
      AGENTS_FILE: agentsFile,
      HARNESS_MACHINE_ID: "machine-docs",
      HARNESS_URL: "ws://127.0.0.1:9/v1/harness/ws",
    };
    const base = parseConfig(baseEnvSchema, env);
    const health = new HealthRegistry();
    const metrics = createMetricsRegistry();
    const http = await createServiceServer({ log: testLog, metrics, health });
    const routes: AnnouncedRoute[] = [];
    http.addHook("onRoute", (route: RouteOptions) => {
      const methods = Array.isArray(route.method) ? route.method : [route.method];
      // @fastify/websocket hides WebSocket routes; the document shows them again (libs/http/api-docs.ts).
      const hidden =
        (route.schema as { hide?: boolean } | undefined)?.hide === true && !("websocket" in route);
      for (const method of methods) routes.push({ method, url: route.url, hidden });
    });
    const connections = new RedisConnections(t.url, testLog);
    await connections.untilAvailable();
    const running: RunningService[] = [];
    for (const definition of [
      harnessGatewayService,
      deviceGatewayService,
      routerService,
      runResolverService,
      ttsDispatcherService,
      consoleService,
    ])
      running.push(
        await definition.start({
          name: definition.name,
          env,
          base,
          log: testLog,
          metrics,
          health,
          connections,
          keys: t.keys,
          http,
          consumerName: `${definition.name}-docs`,
          consumerSettings: consumerSettingsOf(base),
        }),
      );
    await http.ready();
    return new OperatorHost(t, http, routes, running, connections, health);
  }

  /** Listens on a free loopback port, for tests that must go through a real socket (headers, streams); the URL. */
  listen(): Promise<string> {
    return this.http.listen({ host: "127.0.0.1", port: 0 });
  }

  osToken(sub: string, role: "device" | "operator", expiresInSeconds = 600): Promise<string> {
    return signToken(OS_SECRET, { audience: "os", sub, role, expiresInSeconds });
  }

  harnessToken(sub: string, role: "os" | "operator"): Promise<string> {
    return signToken(HARNESS_SECRET, { audience: "harness", sub, role, expiresInSeconds: 600 });
  }

  async stop(): Promise<void> {
    await Promise.all(this.running.map((service) => service.stop()));
    await this.http.close();
    await this.connections.close();
    this.health.close();
    await this.t.cleanup();
  }
}
