import { execFileSync } from "node:child_process";
import { parse } from "yaml";
import { z } from "zod";

/** The fields of `docker-compose config` the check reads: each service's image and whether it has a healthcheck. */
const composeConfigSchema = z.object({
  services: z.record(
    z.string(),
    z.object({
      image: z.string().optional(),
      healthcheck: z.object({ test: z.unknown() }).optional(),
    }),
  ),
});
export type ComposeService = { name: string; image: string | undefined; healthchecked: boolean };

const containerStateSchema = z.object({
  Status: z.string(),
  Health: z.object({ Status: z.string() }).optional(),
});

/** One docker-compose project on the engine DOCKER_HOST names, as `docker-compose.yml` defines it. */
export class ComposeStack {
  constructor(private readonly project: string) {}

  private compose(args: string[]): string {
    return execFileSync(
      "docker-compose",
      ["--project-name", this.project, "--file", "docker-compose.yml", ...args],
      {
        encoding: "utf8",
      },
    );
  }

  services(): ComposeService[] {
    const config = composeConfigSchema.parse(parse(this.compose(["config"])));
    return Object.entries(config.services).map(([name, service]) => ({
      name,
      image: service.image,
      healthchecked: service.healthcheck !== undefined,
    }));
  }

  /** `healthy` for a service with a healthcheck, `running` for one without, else what Docker says it is. */
  state(service: ComposeService): string {
    const id = this.compose(["ps", "--quiet", service.name]).trim();
    if (!id) return "absent";
    const state = containerStateSchema.parse(
      JSON.parse(
        execFileSync("docker", ["inspect", "--format", "{{json .State}}", id], { encoding: "utf8" }),
      ),
    );
    if (state.Status !== "running") return state.Status;
    return service.healthchecked ? (state.Health?.Status ?? "starting") : "running";
  }
}
