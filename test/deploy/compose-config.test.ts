import { execFileSync, spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { projectRoot } from "../helpers/child-process.js";

const present = spawnSync("sh", ["-c", "command -v docker-compose"]).status === 0;
if (!present)
  process.stderr.write("compose config test skipped: docker-compose not installed (.ci/run installs it)\n");

describe.skipIf(!present)("docker-compose.yml", () => {
  it("passes docker-compose config, every service waits for healthy dependencies and has a healthcheck", () => {
    const rendered = execFileSync("docker-compose", ["-f", "docker-compose.yml", "config"], {
      cwd: projectRoot,
      encoding: "utf8",
      env: { ...process.env, AUTH_JWT_SECRET: "a".repeat(64), HARNESS_JWT_SECRET: "b".repeat(64) },
    });
    const services = parse(rendered).services as Record<string, Record<string, unknown>>;
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
    }
    expect(Object.keys(services)).toEqual(
      expect.arrayContaining(["redis", "prometheus", "alertmanager", "grafana"]),
    );
  });
});
