import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { z } from "zod";
import { signToken } from "../../libs/auth/tokens.js";
import { runListSchema } from "../../services/device-gateway/os-api-schemas.js";
import { readCommandLine } from "../cli-args.js";
import { ComposeStack, type ComposeService } from "./compose-stack.js";

const HELP = [
  "usage: node --import tsx tools/containers/verify-stack.ts --project <name> --services '<name> …'",
  "",
  "Checks a booted docker-compose stack (tools/containers/check.sh): every service healthy, one voice request",
  "spoken once through lamp-sim, Prometheus scraping every service and the Redis exporter, Alertmanager found.",
].join("\n");

const args = readCommandLine({
  name: "verify-stack",
  help: HELP,
  options: { project: { type: "string" }, services: { type: "string" } },
  schema: z.strictObject({
    project: z.string().min(1),
    services: z.string().transform((list) => list.split(" ").filter(Boolean)),
  }),
});

const PROJECT_IMAGE = "lampline:latest";
const LAMP_URL = "http://127.0.0.1:8080";
const PROMETHEUS_URL = "http://127.0.0.1:9090";
// The compose stack's own agent (deploy/agents.compose.json).
const AGENT = { agentId: "agent-1", machineId: "machine-1" };
const REDIS_MAXMEMORY_BYTES = 512 * 1024 * 1024;

function fail(step: string, detail: string): never {
  process.stderr.write(`verify-stack: ${step}: ${detail}\n`);
  process.exit(1);
}

async function until<T>(
  probe: () => Promise<T> | T,
  accept: (value: T) => boolean,
  timeoutMs: number,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let value = await probe();
  while (!accept(value) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    value = await probe();
  }
  return value;
}

async function everyServiceReady(stack: ComposeStack, services: ComposeService[]): Promise<void> {
  const started = Date.now();
  const ready = (state: string) => state === "healthy" || state === "running";
  const settled = (state: string) =>
    ready(state) || state === "exited" || state === "dead" || state === "unhealthy";
  const states = await until(
    () => services.map((service) => ({ name: service.name, state: stack.state(service) })),
    (list) => list.every(({ state }) => settled(state)),
    180_000,
  );
  const notReady = states.filter(({ state }) => !ready(state));
  if (notReady.length > 0)
    fail("services", notReady.map(({ name, state }) => `${name} is ${state}`).join(", "));
  console.log(
    `${services.length} services healthy or running after ${Math.round((Date.now() - started) / 1000)} s`,
  );
}

const playedSchema = z.object({ event: z.literal("played"), playbackId: z.string() });

/** One voice request from a Lamp through the device-gateway's published port: one playback, one resolved run. */
async function voiceRequestSpokenOnce(): Promise<void> {
  const secret = process.env.AUTH_JWT_SECRET ?? fail("voice", "AUTH_JWT_SECRET is not set");
  const token = await signToken(secret, { audience: "os", sub: "lamp-check", role: "device" });
  const lampSim = spawnSync(
    "node",
    [
      "bin/lamp-sim.mjs",
      ...["--url", `${LAMP_URL.replace("http", "ws")}/v1/lamp/ws`, "--token", token],
      ...["--say", "Paint the house red", "--agent", AGENT.agentId, "--machine", AGENT.machineId],
      ...["--out-dir", join(".tmp", "containers", "spoken"), "--exit-after", "1"],
    ],
    { encoding: "utf8", timeout: 90_000 },
  );
  if (lampSim.status !== 0) fail("voice", `lamp-sim exited ${lampSim.status}: ${lampSim.stderr.slice(-500)}`);
  const played = lampSim.stdout
    .split("\n")
    .filter(Boolean)
    .flatMap((line) => {
      const event = playedSchema.safeParse(JSON.parse(line));
      return event.success ? [event.data] : [];
    });
  if (played.length !== 1) fail("voice", `${played.length} playbacks, expected exactly 1`);
  const runs = runListSchema.parse(
    await (
      await fetch(`${LAMP_URL}/v1/runs?state=resolved`, { headers: { authorization: `Bearer ${token}` } })
    ).json(),
  );
  if (runs.runs.length !== 1) fail("voice", `${runs.runs.length} resolved runs, expected exactly 1`);
  console.log(`voice request spoken once (playback ${played[0]?.playbackId})`);
}

const targetsSchema = z.object({
  data: z.object({
    activeTargets: z.array(z.object({ labels: z.object({ instance: z.string() }), health: z.string() })),
  }),
});
const alertmanagersSchema = z.object({
  data: z.object({ activeAlertmanagers: z.array(z.object({ url: z.string() })) }),
});
const vectorSchema = z.object({
  data: z.object({ result: z.array(z.object({ value: z.tuple([z.number(), z.string()]) })) }),
});

async function prometheusJson<S extends z.ZodType>(path: string, schema: S): Promise<z.infer<S>> {
  return schema.parse(await (await fetch(`${PROMETHEUS_URL}${path}`)).json());
}

/** Every service of the project image and the Redis exporter scraped and up; Alertmanager found. */
async function observed(services: ComposeService[]): Promise<void> {
  const wanted = [
    ...services.filter((service) => service.image === PROJECT_IMAGE).map((service) => `${service.name}:8080`),
    ...services
      .filter((service) => service.name === "redis-exporter")
      .map((service) => `${service.name}:9121`),
  ];
  const upOf = async () => {
    const targets = await prometheusJson("/api/v1/targets", targetsSchema).catch(() => undefined);
    const up = new Set(
      targets?.data.activeTargets.filter((t) => t.health === "up").map((t) => t.labels.instance),
    );
    return wanted.filter((instance) => !up.has(instance));
  };
  const down = await until(upOf, (missing) => missing.length === 0, 90_000);
  if (down.length > 0) fail("prometheus", `not scraped or down: ${down.join(", ")}`);
  console.log(`Prometheus scrapes ${wanted.length} targets, all up`);
  const managers = await prometheusJson("/api/v1/alertmanagers", alertmanagersSchema);
  if (managers.data.activeAlertmanagers.length === 0)
    fail("alertmanager", "Prometheus found no Alertmanager");
  const maxMemory = await prometheusJson(`/api/v1/query?query=redis_memory_max_bytes`, vectorSchema);
  const value = Number(maxMemory.data.result[0]?.value[1]);
  if (value !== REDIS_MAXMEMORY_BYTES) fail("redis-exporter", `redis_memory_max_bytes is ${value}`);
  console.log(`Alertmanager found; the Redis exporter reports maxmemory ${value} bytes`);
}

const stack = new ComposeStack(args.project);
const services = stack.services().filter((service) => args.services.includes(service.name));
await everyServiceReady(stack, services);
await voiceRequestSpokenOnce();
await observed(services);
