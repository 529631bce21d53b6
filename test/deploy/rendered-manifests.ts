import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { z } from "zod";
import { projectRoot } from "../helpers/child-process.js";

/** The fields of the rendered objects these tests read; everything else is checked by the Kubernetes schemas. */
const envVarSchema = z.object({
  name: z.string(),
  value: z.string().optional(),
  valueFrom: z
    .object({
      fieldRef: z.object({ fieldPath: z.string() }).optional(),
      secretKeyRef: z.object({ name: z.string(), key: z.string() }).optional(),
      configMapKeyRef: z.object({ name: z.string(), key: z.string() }).optional(),
    })
    .optional(),
});

const probeSchema = z.object({ httpGet: z.object({ path: z.string(), port: z.string() }) });

export const containerSchema = z.object({
  name: z.string(),
  image: z.string(),
  command: z.array(z.string()),
  env: z.array(envVarSchema).default([]),
  envFrom: z
    .array(
      z.object({
        configMapRef: z.object({ name: z.string() }).optional(),
        secretRef: z.object({ name: z.string() }).optional(),
      }),
    )
    .default([]),
  volumeMounts: z.array(z.object({ name: z.string(), mountPath: z.string() })).default([]),
  readinessProbe: probeSchema.optional(),
  livenessProbe: probeSchema.optional(),
});
export type Container = z.infer<typeof containerSchema>;

export const deploymentSchema = z.object({
  kind: z.literal("Deployment"),
  metadata: z.object({ name: z.string() }),
  spec: z.object({
    replicas: z.number().optional(),
    template: z.object({
      spec: z.object({
        terminationGracePeriodSeconds: z.number(),
        initContainers: z.array(containerSchema).default([]),
        containers: z.array(containerSchema),
        volumes: z
          .array(z.object({ name: z.string(), configMap: z.object({ name: z.string() }).optional() }))
          .default([]),
      }),
    }),
  }),
});
export type DeploymentDoc = z.infer<typeof deploymentSchema>;

export const configMapSchema = z.object({
  kind: z.literal("ConfigMap"),
  metadata: z.object({ name: z.string() }),
  data: z.record(z.string(), z.string()),
});

export const scaledObjectSchema = z.object({
  kind: z.literal("ScaledObject"),
  metadata: z.object({ name: z.string() }),
  spec: z.object({
    scaleTargetRef: z.object({ name: z.string() }),
    triggers: z.array(z.object({ type: z.string(), metadata: z.record(z.string(), z.string()) })),
  }),
});

export type KubeDoc = { apiVersion: string; kind: string; metadata: { name: string } } & Record<
  string,
  unknown
>;

/** The YAML version a reader applies: Kubernetes decodes manifests as YAML 1.1 (`on`, `yes`, `off` are booleans). */
export type YamlVersion = "1.1" | "1.2";

/** Objects as an API server decodes them (YAML 1.1, sigs.k8s.io/yaml), or as a YAML 1.2 reader would. */
export function decodeManifests(text: string, version: YamlVersion = "1.1"): KubeDoc[] {
  return parseAllDocuments(text, { version }).map((document) => {
    if (document.errors.length > 0) throw new Error(`manifest YAML: ${document.errors[0]?.message}`);
    return document.toJS() as KubeDoc;
  });
}

export function overlayText(overlay: string): string {
  return readFileSync(join(projectRoot, "deploy", "k8s", overlay, "lampline.yaml"), "utf8");
}

export function overlayDocuments(overlay: string): KubeDoc[] {
  return decodeManifests(overlayText(overlay));
}

export function ofKind<S extends z.ZodType>(docs: KubeDoc[], schema: S, kind: string): z.infer<S>[] {
  return docs.filter((doc) => doc.kind === kind).map((doc) => schema.parse(doc));
}

const imageOfSchema = z.object({
  spec: z.object({
    template: z.object({ spec: z.object({ containers: z.array(z.object({ image: z.string() })) }) }),
  }),
});

/** The Deployments of the project's own image: the services (the Redis exporter runs another image). */
export function serviceDeployments(docs: KubeDoc[], image: string): DeploymentDoc[] {
  return ofKind(
    docs.filter(
      (doc) =>
        doc.kind === "Deployment" &&
        imageOfSchema.parse(doc).spec.template.spec.containers.some((container) => container.image === image),
    ),
    deploymentSchema,
    "Deployment",
  );
}
