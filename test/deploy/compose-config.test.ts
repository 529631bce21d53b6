import { execFileSync, spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { z } from "zod";
import { projectRoot } from "../helpers/child-process.js";

const present = spawnSync("sh", ["-c", "command -v docker-compose"]).status === 0;
if (!present)
  process.stderr.write("compose config test skipped: docker-compose not installed (.ci/run installs it)\n");

function renderedServices(env: Record<string, string> = {}): Record<string, Record<string, unknown>> {
  const rendered = execFileSync("docker-compose", ["-f", "docker-compose.yml", "config"], {
    cwd: projectRoot,
    encoding: "utf8",
    env: { ...process.env, AUTH_JWT_SECRET: "a".repeat(64), HARNESS_JWT_SECRET: "b".repeat(64), ...env },
  });
  return parse(rendered).services as Record<string, Record<string, unknown>>;
}

const publishedPorts = (services: Record<string, Record<string, unknown>>) =>
  Object.values(services).flatMap((service) => z.array(z.string()).default([]).parse(service.ports));

describe.skipIf(!present)("docker-compose.yml", () => {
  it("publishes every port on 127.0.0.1 only, unless LAMPLINE_BIND_ADDRESS names another address", () => {
    const ports = publishedPorts(renderedServices({ LAMPLINE_BIND_ADDRESS: "" }));
    expect(ports.sort()).toEqual(
      ["3000", "8080", "8081", "8082", "9090", "9093"].map(
        (port) => `127.0.0.1:${port}:${port.replace(/^808[12]$/, "8080")}/tcp`,
      ),
    );
    const everywhere = publishedPorts(renderedServices({ LAMPLINE_BIND_ADDRESS: "0.0.0.0" }));
    expect(everywhere.every((port) => port.startsWith("0.0.0.0:"))).toBe(true);
  });

  it("passes docker-compose config, every service waits for healthy dependencies and has a healthcheck", () => {
    const services = renderedServices();
    const lampline = Object.entries(services).filter(([, service]) => service.image === "lampline:latest");
    expect(lampline.map(([name]) => name).sort()).toEqual([
      "console",
      "device-gateway",
      "engine-runner",
      "evidence-extractor",
      "harness-gateway",
      "result-producer",
      "router",
      "run-resolver",
      "tts-dispatcher",
    ]);
    for (const [name, service] of lampline) {
      expect(service.healthcheck, name).toBeDefined();
      expect(service.depends_on, name).toMatchObject({ redis: { condition: "service_healthy" } });
      expect(service.read_only, name).toBe(true);
    }
    expect(Object.keys(services)).toEqual(
      expect.arrayContaining(["redis", "redis-exporter", "prometheus", "alertmanager", "grafana"]),
    );
  });
});
