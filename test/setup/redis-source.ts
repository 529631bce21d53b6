/**
 * Which real Redis the test suite runs against, decided once from the environment. A Docker engine, when there is
 * one, is used through Testcontainers and never quietly replaced: a failure there fails the run with its reason.
 */
export type RedisSource =
  | { kind: "testcontainers"; reason: string; hostOverride?: string }
  | { kind: "redis-url"; reason: string; url: string }
  | { kind: "redis-server"; reason: string };

export interface SourceEnvironment {
  DOCKER_HOST?: string | undefined;
  REDIS_URL?: string | undefined;
  TESTCONTAINERS_HOST_OVERRIDE?: string | undefined;
}

export const DEFAULT_DOCKER_SOCKET = "/var/run/docker.sock";

export function chooseRedisSource(env: SourceEnvironment, defaultSocketExists: boolean): RedisSource {
  const engine = env.DOCKER_HOST ?? (defaultSocketExists ? `unix://${DEFAULT_DOCKER_SOCKET}` : undefined);
  if (engine) {
    return {
      kind: "testcontainers",
      reason: `a Docker engine is configured at ${engine}`,
      ...hostOverride(engine, env.TESTCONTAINERS_HOST_OVERRIDE),
    };
  }
  if (env.REDIS_URL) return { kind: "redis-url", reason: "REDIS_URL is set", url: env.REDIS_URL };
  return { kind: "redis-server", reason: "no Docker engine and no REDIS_URL: redis-server from PATH" };
}

/**
 * An engine on a local socket publishes ports on this machine. Inside a container (`/.dockerenv`), Testcontainers
 * would dial the bridge gateway instead, where nothing listens when ports are published on loopback.
 */
function hostOverride(engine: string, given: string | undefined): { hostOverride?: string } {
  if (given) return { hostOverride: given };
  return engine.startsWith("unix://") ? { hostOverride: "127.0.0.1" } : {};
}
