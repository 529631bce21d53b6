import { execFileSync, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ScaledObject } from "@kubernetes-models/keda/keda.sh/v1alpha1/ScaledObject";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { signToken } from "../../libs/auth/tokens.js";
import { freePort } from "../../libs/redis/redis-server-process.js";
import { serviceNamed } from "../../services/catalog.js";
import { consumerGroups } from "../../tools/deploy/k8s/consumer-groups.js";
import {
  IMAGE,
  KEY_PREFIX,
  REDIS_ARGS,
  REDIS_EXPORTER_IMAGE,
  secretKeys,
} from "../../tools/deploy/k8s/manifests.js";
import { OVERLAYS } from "../../tools/deploy/k8s/overlays.js";
import { renderedFiles } from "../../tools/deploy/rendered-files.js";
import { projectRoot, TsProcess } from "../helpers/child-process.js";
import { waitFor } from "../helpers/test-redis.js";
import { TestLamp } from "../e2e/test-lamp.js";
import { containerEnvironment, type AddressMap } from "./pod-environment.js";
import {
  decodeManifests,
  ofKind,
  overlayDocuments,
  overlayText,
  scaledObjectSchema,
  serviceDeployments,
  type DeploymentDoc,
  type KubeDoc,
} from "./rendered-manifests.js";
import { consumerGroupsOf } from "../../libs/streams/group-info.js";

const SERVICE_OF = new Map(consumerGroups(KEY_PREFIX, "m").map((group) => [group.service, true]));

async function schemaValidate(doc: KubeDoc): Promise<void> {
  const [group, version] = doc.apiVersion.includes("/") ? doc.apiVersion.split("/") : ["", doc.apiVersion];
  const module =
    group === "keda.sh"
      ? { ScaledObject }
      : await import(
          group === ""
            ? `kubernetes-models/${version}/${doc.kind}`
            : `kubernetes-models/${group}/${version}/${doc.kind}`
        );
  const Model = module[doc.kind] as new (value: unknown) => { validate(): void };
  new Model(doc).validate();
}

function aSecret(keys: string[], redisUrl: string): Record<string, string> {
  const values: Record<string, string> = {
    AUTH_JWT_SECRET: randomBytes(32).toString("hex"),
    HARNESS_JWT_SECRET: randomBytes(32).toString("hex"),
    REDIS_URL: redisUrl,
    REDIS_ADDRESS: new URL(redisUrl).host,
    REDIS_CLUSTER_NODES: "redis-0.example:6379,redis-1.example:6379,redis-2.example:6379",
    REDIS_PASSWORD: "",
  };
  return Object.fromEntries(keys.map((key) => [key, values[key] ?? ""]));
}

const STREAM_TRIGGER_TYPES = ["redis-streams", "redis-cluster-streams"];

describe("manifests decoded the way Kubernetes decodes them (YAML 1.1)", () => {
  const configMap = (value: string) =>
    `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: lampline-config\ndata:\n  TURN_CORRELATION_V2: ${value}\n`;

  it("a ConfigMap value written as an unquoted on is a boolean, and the schema check refuses it", async () => {
    const [unquoted] = decodeManifests(configMap("on"));
    if (!unquoted) throw new Error("no document");
    expect(unquoted.data).toEqual({ TURN_CORRELATION_V2: true });
    await expect(schemaValidate(unquoted)).rejects.toThrow(/must be string/);
    const [quoted] = decodeManifests(configMap('"on"'));
    if (!quoted) throw new Error("no document");
    await expect(schemaValidate(quoted)).resolves.toBeUndefined();
  });

  for (const overlay of OVERLAYS)
    it(`overlay ${overlay.name} means the same under YAML 1.1 as under YAML 1.2`, () => {
      const text = overlayText(overlay.name);
      expect(decodeManifests(text, "1.1")).toEqual(decodeManifests(text, "1.2"));
    });
});

describe("Kubernetes manifests", () => {
  it("the checked-in render is what the TypeScript renders (npx tsx tools/deploy/render.ts)", async () => {
    for (const [path, content] of await renderedFiles())
      expect(readFileSync(join(projectRoot, path), "utf8"), path).toBe(content);
  });

  for (const overlay of OVERLAYS) {
    describe(`overlay ${overlay.name}`, () => {
      const docs = overlayDocuments(overlay.name);
      const deployments = serviceDeployments(docs, IMAGE);
      const scaled = ofKind(docs, scaledObjectSchema, "ScaledObject");

      it("every object is valid against the Kubernetes and KEDA schemas", async () => {
        for (const doc of docs) await schemaValidate(doc);
        // The Redis exporter: beside Redis in dev, on its own for prod's external Redis, none for a Cluster.
        const exporters = docs.filter((doc) => JSON.stringify(doc).includes(REDIS_EXPORTER_IMAGE));
        expect(exporters.map((doc) => `${doc.kind}/${doc.metadata.name}`)).toEqual(
          {
            "in-cluster": ["StatefulSet/redis"],
            external: ["Deployment/redis-exporter"],
            "external-cluster": [],
          }[overlay.redis],
        );
        expect(deployments.map((deployment) => deployment.metadata.name).sort()).toEqual([
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
      });

      it("KEDA owns the replica count of exactly the scaled Deployments, one trigger pair per consumer group", () => {
        const groups = consumerGroups(KEY_PREFIX, overlay.machineId);
        for (const deployment of deployments) {
          const target = scaled.find(
            (object) => object.spec.scaleTargetRef.name === deployment.metadata.name,
          );
          expect(deployment.spec.replicas === undefined, deployment.metadata.name).toBe(target !== undefined);
        }
        for (const object of scaled) {
          const own = groups.filter((group) => group.service === object.metadata.name);
          const streamTriggers = object.spec.triggers.filter((trigger) =>
            STREAM_TRIGGER_TYPES.includes(trigger.type),
          );
          // A Cluster overlay's triggers are KEDA's cluster scalers reading the seeds; the others one address.
          expect(new Set(object.spec.triggers.map((trigger) => trigger.type))).toEqual(
            new Set(
              overlay.redis === "external-cluster"
                ? [
                    "redis-cluster-streams",
                    ...(object.metadata.name === "tts-dispatcher" ? ["redis-cluster"] : []),
                  ]
                : ["redis-streams", ...(object.metadata.name === "tts-dispatcher" ? ["redis"] : [])],
            ),
          );
          expect(
            streamTriggers.map((trigger) => `${trigger.metadata.stream}|${trigger.metadata.consumerGroup}`),
          ).toEqual(
            own.flatMap((group) => [
              `${group.streamKey}|${group.group}`,
              `${group.streamKey}|${group.group}`,
            ]),
          );
          expect(streamTriggers.filter((trigger) => trigger.metadata.lagCount).length).toBe(own.length);
          expect(streamTriggers.filter((trigger) => trigger.metadata.pendingEntriesCount).length).toBe(
            own.length,
          );
        }
        expect(
          scaled.map((object) => object.metadata.name).every((name) => SERVICE_OF.has(name as never)),
        ).toBe(true);
      });

      it("every configuration check passes with the manifests' environment and a Secret made as documented", () => {
        const root = mkdtempSync(join(tmpdir(), `k8s-${overlay.name}-`));
        const secret = aSecret(secretKeys(overlay), "redis://redis.example:6379");
        for (const deployment of deployments) {
          const [container] = deployment.spec.template.spec.containers;
          if (!container) throw new Error("no container");
          const env = containerEnvironment({
            docs,
            deployment,
            container,
            secret,
            root,
            addresses: new Map(),
            port: 1,
          });
          const definition = serviceNamed(env.SERVICE ?? "");
          expect(definition, deployment.metadata.name).toBeDefined();
          expect(() => definition?.checkConfig(env), deployment.metadata.name).not.toThrow();
        }
        rmSync(root, { recursive: true, force: true });
      });

      it("kubectl kustomize builds the overlay into the same objects with the overlay's image", (context) => {
        if (spawnSync("kubectl", ["version", "--client"]).status !== 0) {
          context.skip(); // kubectl is optional: the render above is what CI checks
          return;
        }
        const built = execFileSync(
          "kubectl",
          ["kustomize", join(projectRoot, "deploy", "k8s", overlay.name)],
          {
            encoding: "utf8",
          },
        );
        const objects = parseAllDocuments(built).map((document) => document.toJS() as KubeDoc);
        const image = `${overlay.image.newName}:${overlay.image.newTag}`;
        const expected = JSON.parse(
          JSON.stringify(docs).split('"image":"lampline"').join(`"image":"${image}"`),
        );
        const key = (doc: KubeDoc) => `${doc.kind}/${doc.metadata.name}`;
        const sorted = (list: KubeDoc[]) => [...list].sort((a, b) => key(a).localeCompare(key(b)));
        expect(sorted(objects)).toEqual(sorted(expected));
      });
    });
  }
});

describe("the dev overlay started as local processes", () => {
  const docs = overlayDocuments("dev");
  const deployments = serviceDeployments(docs, IMAGE);
  const overlay = OVERLAYS.find((candidate) => candidate.name === "dev");
  const root = mkdtempSync(join(tmpdir(), "k8s-dev-pods-"));
  const processes = new Map<string, TsProcess>();
  const ports = new Map<string, number>();
  let redis: TsProcess;
  let redisPort = 0;
  let secret: Record<string, string>;

  // The containers' commands run in a compiled tree laid out as the image (deploy/Dockerfile).
  let image = "";

  const start = (deployment: DeploymentDoc, env: Record<string, string>, command: string[]) => {
    const unset = Object.fromEntries(Object.keys(process.env).map((name) => [name, undefined]));
    const [file, ...args] = command;
    return new TsProcess(
      deployment.metadata.name,
      { ...unset, PATH: process.env.PATH, ...env },
      [],
      [file === "node" ? process.execPath : (file ?? ""), args],
      image,
    );
  };

  beforeAll(async () => {
    if (!overlay) throw new Error("no dev overlay");
    mkdirSync(join(projectRoot, ".tmp"), { recursive: true });
    image = mkdtempSync(join(projectRoot, ".tmp", "k8s-image-"));
    execFileSync("sh", ["tools/deploy/compile.sh", image], { cwd: projectRoot });
    mkdirSync(join(image, "test", "fixtures"), { recursive: true });
    symlinkSync(
      join(projectRoot, "test", "fixtures", "engine-scenarios"),
      join(image, "test", "fixtures", "engine-scenarios"),
    );
    redisPort = await freePort();
    // The StatefulSet's own command line, on loopback and a temp data directory.
    redis = new TsProcess(
      "redis",
      {},
      [],
      [
        "redis-server",
        [
          ...REDIS_ARGS,
          "--dir",
          mkdtempSync(join(root, "redis-")),
          "--port",
          String(redisPort),
          "--bind",
          "127.0.0.1",
        ],
      ],
    );
    await redis.waitForOutput("Ready to accept connections", 15_000);
    for (const deployment of deployments) ports.set(deployment.metadata.name, await freePort());
    const addresses: AddressMap = new Map([
      ["redis.lampline.svc.cluster.local:6379", `127.0.0.1:${redisPort}`],
      ["harness-gateway.lampline.svc.cluster.local:8080", `127.0.0.1:${ports.get("harness-gateway")}`],
    ]);
    secret = aSecret(secretKeys(overlay), `redis://127.0.0.1:${redisPort}`);
    const envOf = (
      deployment: DeploymentDoc,
      container: DeploymentDoc["spec"]["template"]["spec"]["containers"][0],
    ) =>
      containerEnvironment({
        docs,
        deployment,
        container,
        secret,
        root,
        addresses,
        port: ports.get(deployment.metadata.name) ?? 0,
      });
    const firstWithInit = deployments.find(
      (deployment) => deployment.spec.template.spec.initContainers.length > 0,
    );
    const init = firstWithInit?.spec.template.spec.initContainers[0];
    if (!firstWithInit || !init) throw new Error("no init container");
    const groups = start(firstWithInit, envOf(firstWithInit, init), init.command);
    expect(await groups.exit(), groups.log).toBe(0);
    for (const deployment of deployments) {
      const [container] = deployment.spec.template.spec.containers;
      if (!container) throw new Error("no container");
      processes.set(
        deployment.metadata.name,
        start(deployment, envOf(deployment, container), container.command),
      );
    }
  }, 240_000);

  afterAll(async () => {
    await Promise.all([...processes.values()].map((child) => child.kill("SIGKILL")));
    await redis?.kill("SIGKILL");
    rmSync(root, { recursive: true, force: true });
    if (image) rmSync(image, { recursive: true, force: true });
  });

  it("every container answers its readiness and liveness probe paths", async () => {
    for (const deployment of deployments) {
      const [container] = deployment.spec.template.spec.containers;
      const port = ports.get(deployment.metadata.name);
      for (const probe of [container?.readinessProbe, container?.livenessProbe]) {
        if (!probe) throw new Error(`${deployment.metadata.name}: probe missing`);
        const url = `http://127.0.0.1:${port}${probe.httpGet.path}`;
        const status = await waitFor(
          async () => (await fetch(url).catch(() => undefined))?.status,
          (answer) => answer === 200,
          { timeoutMs: 60_000 },
        );
        expect(status, `${url}\n${processes.get(deployment.metadata.name)?.log}`).toBe(200);
      }
    }
  }, 120_000);

  it("a voice request through the stack gets its answer spoken, and every scaler's stream and group exist", async () => {
    const deviceId = "lamp-k8s";
    const token = await signToken(secret.AUTH_JWT_SECRET ?? "", {
      audience: "os",
      sub: deviceId,
      role: "device",
      expiresInSeconds: 600,
    });
    const lamp = await TestLamp.connect({
      url: `ws://127.0.0.1:${ports.get("device-gateway")}/v1/lamp/ws`,
      token,
    });
    await lamp.say({
      agentId: "claude-demo",
      machineId: overlay?.machineId ?? "",
      text: "Paint the house red",
    });
    const [utterance] = await lamp.waitForUtterances(1, 60_000);
    expect(utterance?.text.length).toBeGreaterThan(0);
    lamp.close();

    const client = new Redis(`redis://127.0.0.1:${redisPort}`);
    for (const object of ofKind(docs, scaledObjectSchema, "ScaledObject"))
      for (const trigger of object.spec.triggers) {
        if (trigger.type === "redis-streams") {
          const groups = await consumerGroupsOf(client, trigger.metadata.stream ?? "");
          const names = groups.map(({ name }) => name);
          expect(names, `${trigger.metadata.stream}`).toContain(trigger.metadata.consumerGroup);
        } else {
          // The BullMQ wait list: the queue's keys live under the same prefix (the list itself is empty when idle).
          const queuePrefix = (trigger.metadata.listName ?? "").replace(/:wait$/, "");
          expect(await client.exists(`${queuePrefix}:meta`), queuePrefix).toBe(1);
        }
      }
    await client.quit();
  }, 90_000);

  it("SIGTERM drains every service within its termination grace period", async () => {
    const started = Date.now();
    const exits = await Promise.all(
      deployments.map(async (deployment) => ({
        name: deployment.metadata.name,
        code: await processes.get(deployment.metadata.name)?.kill("SIGTERM"),
      })),
    );
    const grace = Math.min(
      ...deployments.map((deployment) => deployment.spec.template.spec.terminationGracePeriodSeconds),
    );
    expect(exits.filter((exit) => exit.code !== 0)).toEqual([]);
    expect(Date.now() - started).toBeLessThan(grace * 1000);
  }, 60_000);
});
