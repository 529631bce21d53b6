import { ConfigMap } from "kubernetes-models/v1/ConfigMap";
import { Namespace } from "kubernetes-models/v1/Namespace";
import { Service } from "kubernetes-models/v1/Service";
import type { IContainer } from "kubernetes-models/v1/Container";
import type { IEnvVar } from "kubernetes-models/v1/EnvVar";
import type { IPodSpec } from "kubernetes-models/v1/PodSpec";
import { Deployment } from "kubernetes-models/apps/v1/Deployment";
import { StatefulSet } from "kubernetes-models/apps/v1/StatefulSet";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget";
import { NetworkPolicy } from "kubernetes-models/networking.k8s.io/v1/NetworkPolicy";
import { Ingress } from "kubernetes-models/networking.k8s.io/v1/Ingress";
import { ScaledObject } from "@kubernetes-models/keda/keda.sh/v1alpha1/ScaledObject";
import type { ServiceName } from "../../../libs/contract/catalog.js";
import { HASH_MAX_LISTPACK_VALUE } from "../../../libs/redis/redis-server-process.js";
import { consumerGroups, playbackWaitList, RENDERED_PARTITIONS } from "./consumer-groups.js";
import type { Overlay } from "./overlays.js";

export const NAMESPACE = "lampline";
export const IMAGE = "lampline";
export const KEY_PREFIX = "ll";
export const SECRET = "lampline-secrets";
const CONFIG = "lampline-config";
const AGENTS = "lampline-agents";
export const AGENTS_DIR = "/etc/lampline";
const PORT = 8080;
/** The slowest drain is a consumer's last blocking read plus in-flight work, bounded by SHUTDOWN_TIMEOUT_MS. */
const SHUTDOWN_TIMEOUT_MS = 20_000;
const TERMINATION_GRACE_SECONDS = 30;

type Scaling = "keda" | "singleton" | "gateway" | "router";

interface ServiceShape {
  name: ServiceName;
  scaling: Scaling;
  /** Keys of the Secret this service reads, and nothing more. */
  secrets: readonly string[];
  agents: boolean;
  /** Reachable from outside the namespace (Ingress, NetworkPolicy). */
  public?: { path: string };
  /** Consumer groups exist before it starts (init container). */
  consumes: boolean;
}

const SERVICES: readonly ServiceShape[] = [
  { name: "engine-runner", scaling: "singleton", secrets: [], agents: true, consumes: true },
  { name: "evidence-extractor", scaling: "keda", secrets: [], agents: false, consumes: true },
  { name: "result-producer", scaling: "keda", secrets: [], agents: false, consumes: true },
  {
    name: "harness-gateway",
    scaling: "gateway",
    secrets: ["HARNESS_JWT_SECRET"],
    agents: true,
    public: { path: "/v1/harness" },
    consumes: false,
  },
  {
    name: "device-gateway",
    scaling: "gateway",
    secrets: ["AUTH_JWT_SECRET"],
    agents: false,
    public: { path: "/" },
    consumes: false,
  },
  { name: "router", scaling: "router", secrets: ["HARNESS_JWT_SECRET"], agents: false, consumes: true },
  { name: "run-resolver", scaling: "keda", secrets: [], agents: false, consumes: true },
  { name: "tts-dispatcher", scaling: "keda", secrets: [], agents: false, consumes: true },
  {
    name: "console",
    scaling: "gateway",
    secrets: ["AUTH_JWT_SECRET"],
    agents: false,
    public: { path: "/console" },
    consumes: false,
  },
];

/** What the Secret `lampline-secrets` must hold in an overlay (created outside git, docs/operations.md). */
export function secretKeys(overlay: Overlay): string[] {
  return ["AUTH_JWT_SECRET", "HARNESS_JWT_SECRET", ...redisSecretKeys(overlay)];
}

/**
 * The Secret's Redis keys: for one Redis its URL (with credentials) and `host:port` for KEDA; for a Cluster the
 * seed nodes for the services and KEDA (`host:port,…`) and a URL that carries only the credentials.
 */
function redisSecretKeys(overlay: Overlay): string[] {
  switch (overlay.redis) {
    case "in-cluster":
      return [];
    case "external":
      return ["REDIS_URL", "REDIS_ADDRESS", "REDIS_PASSWORD"];
    case "external-cluster":
      return ["REDIS_URL", "REDIS_CLUSTER_NODES", "REDIS_PASSWORD"];
  }
}

const labels = (name: string) => ({
  "app.kubernetes.io/name": name,
  "app.kubernetes.io/part-of": "lampline",
});
const meta = (name: string) => ({ name, namespace: NAMESPACE, labels: labels(name) });
const selector = (name: string) => ({ matchLabels: { "app.kubernetes.io/name": name } });

const restricted = {
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  capabilities: { drop: ["ALL"] },
};

function podSecurity(uid: number) {
  return {
    runAsNonRoot: true,
    runAsUser: uid,
    runAsGroup: uid,
    fsGroup: uid,
    seccompProfile: { type: "RuntimeDefault" },
  } as const;
}

function configMap(overlay: Overlay): ConfigMap {
  const redis: Record<string, string> =
    overlay.redis === "in-cluster"
      ? {
          REDIS_URL: `redis://redis.${NAMESPACE}.svc.cluster.local:6379`,
          REDIS_ADDRESS: `redis.${NAMESPACE}.svc.cluster.local:6379`,
        }
      : {};
  return new ConfigMap({
    metadata: meta(CONFIG),
    data: {
      ...redis,
      KEY_PREFIX,
      // The scalers' triggers are rendered per partition: every process must agree on the count.
      STREAM_PARTITIONS: String(RENDERED_PARTITIONS),
      HOST: "0.0.0.0",
      PORT: String(PORT),
      LOG_LEVEL: overlay.logLevel,
      NODE_ENV: "production",
      SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS),
      HARNESS_URL: `ws://harness-gateway.${NAMESPACE}.svc.cluster.local:${PORT}/v1/harness/ws`,
      AGENTS_FILE: `${AGENTS_DIR}/agents.json`,
      MACHINE_ID: overlay.machineId,
      HARNESS_MACHINE_ID: overlay.machineId,
      TURN_CORRELATION_V2: "on",
      PLAYBACK_ACK_TIMEOUT_MS: "30000",
    },
  });
}

function agentsConfigMap(overlay: Overlay): ConfigMap {
  return new ConfigMap({
    metadata: meta(AGENTS),
    data: { "agents.json": `${JSON.stringify(overlay.agents, null, 2)}\n` },
  });
}

function serviceEnv(shape: ServiceShape): IEnvVar[] {
  return [
    { name: "SERVICE", value: shape.name },
    // Stable per pod: a restarted pod reads its own pending entries first.
    { name: "CONSUMER_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
    ...(shape.name === "device-gateway"
      ? [{ name: "GATEWAY_INSTANCE_ID", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } }]
      : []),
    ...shape.secrets.map((key) => ({ name: key, valueFrom: { secretKeyRef: { name: SECRET, key } } })),
  ];
}

/** prod reads the Redis address and credentials from the Secret; dev from the ConfigMap. */
function redisEnv(overlay: Overlay): IEnvVar[] {
  return redisSecretKeys(overlay).map((key) => ({
    name: key,
    valueFrom: { secretKeyRef: { name: SECRET, key } },
  }));
}

const tmpMount = { name: "tmp", mountPath: "/tmp" };

function initContainers(shape: ServiceShape, overlay: Overlay): IContainer[] {
  if (!shape.consumes) return [];
  return [
    {
      name: "stream-groups",
      image: IMAGE,
      command: ["node", "tools/deploy/ensure-stream-groups.js"],
      envFrom: [{ configMapRef: { name: CONFIG } }],
      env: redisEnv(overlay),
      securityContext: restricted,
      volumeMounts: [tmpMount],
      resources: { requests: { cpu: "20m", memory: "64Mi" }, limits: { memory: "256Mi" } },
    },
  ];
}

function podSpec(shape: ServiceShape, overlay: Overlay): IPodSpec {
  const volumes = [{ name: "tmp", emptyDir: { sizeLimit: "256Mi" } }];
  const mounts = [tmpMount];
  if (shape.agents) {
    volumes.push({ name: "agents", configMap: { name: AGENTS } } as never);
    mounts.push({ name: "agents", mountPath: AGENTS_DIR, readOnly: true } as never);
  }
  return {
    securityContext: podSecurity(1000),
    terminationGracePeriodSeconds: TERMINATION_GRACE_SECONDS,
    automountServiceAccountToken: false,
    initContainers: initContainers(shape, overlay),
    containers: [
      {
        name: shape.name,
        image: IMAGE,
        command: ["node", "services/run-service.js"],
        envFrom: [{ configMapRef: { name: CONFIG } }],
        env: [...serviceEnv(shape), ...redisEnv(overlay)],
        ports: [{ name: "http", containerPort: PORT }],
        readinessProbe: { httpGet: { path: "/readyz", port: "http" }, periodSeconds: 5, failureThreshold: 3 },
        livenessProbe: {
          httpGet: { path: "/healthz", port: "http" },
          initialDelaySeconds: 10,
          periodSeconds: 10,
          failureThreshold: 6,
        },
        startupProbe: { httpGet: { path: "/healthz", port: "http" }, periodSeconds: 2, failureThreshold: 60 },
        resources:
          shape.name === "engine-runner"
            ? { requests: { cpu: "250m", memory: "256Mi" }, limits: { memory: "1Gi" } }
            : { requests: { cpu: "100m", memory: "128Mi" }, limits: { memory: "512Mi" } },
        securityContext: restricted,
        volumeMounts: mounts,
      },
    ],
    volumes,
  };
}

function replicasOf(shape: ServiceShape, overlay: Overlay): { replicas?: number } {
  switch (shape.scaling) {
    case "keda":
      return {}; // KEDA owns the count
    case "singleton":
      return { replicas: 1 };
    case "gateway":
      return { replicas: overlay.replicas.gateways };
    case "router":
      return { replicas: overlay.replicas.router };
  }
}

function deployment(shape: ServiceShape, overlay: Overlay): Deployment {
  return new Deployment({
    metadata: meta(shape.name),
    spec: {
      ...replicasOf(shape, overlay),
      // One engine process per agent: never two runners of one machine, not even during a rollout.
      strategy: shape.scaling === "singleton" ? { type: "Recreate" } : { type: "RollingUpdate" },
      selector: selector(shape.name),
      template: {
        metadata: {
          labels: labels(shape.name),
          annotations: {
            "prometheus.io/scrape": "true",
            "prometheus.io/port": String(PORT),
            "prometheus.io/path": "/metrics",
          },
        },
        spec: podSpec(shape, overlay),
      },
    },
  });
}

function service(shape: ServiceShape): Service {
  return new Service({
    metadata: meta(shape.name),
    spec: {
      selector: { "app.kubernetes.io/name": shape.name },
      ports: [{ name: "http", port: PORT, targetPort: "http" }],
    },
  });
}

/** maxUnavailable 1: a drain may always evict a pod, even of a single-replica Deployment. */
function disruptionBudget(shape: ServiceShape): PodDisruptionBudget {
  return new PodDisruptionBudget({
    metadata: meta(shape.name),
    spec: { maxUnavailable: 1, selector: selector(shape.name) },
  });
}

const LAG_TARGET = "200";
const PENDING_TARGET = "100";

/** Each consumer group of the service scales it on its own backlog: undelivered lag and unacknowledged pending. */
function scaledObject(shape: ServiceShape, overlay: Overlay): ScaledObject {
  const groups = consumerGroups(KEY_PREFIX, overlay.machineId).filter(
    (group) => group.service === shape.name,
  );
  const onCluster = overlay.redis === "external-cluster";
  const address: Record<string, string> = onCluster
    ? { addressesFromEnv: "REDIS_CLUSTER_NODES" }
    : { addressFromEnv: "REDIS_ADDRESS" };
  const password: Record<string, string> =
    overlay.redis === "in-cluster" ? {} : { passwordFromEnv: "REDIS_PASSWORD" };
  // One trigger pair per partition: KEDA scales on the busiest partition (the HPA takes the largest of its metrics).
  const streamTriggers = groups.flatMap(({ streamKey, group, partition }) => [
    {
      type: onCluster ? "redis-cluster-streams" : "redis-streams",
      name: `${group}-p${partition}-lag`,
      metadata: {
        ...address,
        ...password,
        stream: streamKey,
        consumerGroup: group,
        lagCount: LAG_TARGET,
        activationLagCount: "0",
      },
    },
    {
      type: onCluster ? "redis-cluster-streams" : "redis-streams",
      name: `${group}-p${partition}-pending`,
      metadata: {
        ...address,
        ...password,
        stream: streamKey,
        consumerGroup: group,
        pendingEntriesCount: PENDING_TARGET,
      },
    },
  ]);
  const waitList = playbackWaitList(KEY_PREFIX);
  const queueTriggers =
    waitList.service === shape.name
      ? [
          {
            type: onCluster ? "redis-cluster" : "redis",
            name: "lamp-playback-waiting",
            metadata: {
              ...address,
              ...password,
              listName: waitList.key,
              listLength: "50",
              activationListLength: "0",
            },
          },
        ]
      : [];
  return new ScaledObject({
    metadata: meta(shape.name),
    spec: {
      scaleTargetRef: { name: shape.name },
      minReplicaCount: 1,
      // A group reading in order has one reader per partition: a replica beyond the partitions would only idle.
      maxReplicaCount: groups.some((group) => group.inOrder)
        ? Math.min(overlay.maxReplicas, RENDERED_PARTITIONS)
        : overlay.maxReplicas,
      pollingInterval: 15,
      cooldownPeriod: 120,
      triggers: [...streamTriggers, ...queueTriggers],
    },
  });
}

/** Deny all ingress by default; pods of the namespace talk to each other; only the public services are reachable from outside. */
function networkPolicies(overlay: Overlay): NetworkPolicy[] {
  const inNamespace = { podSelector: {} };
  const monitoring = {
    namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "monitoring" } },
  };
  const keda = { namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "keda" } } };
  const policies = [
    new NetworkPolicy({
      metadata: meta("default-deny-ingress"),
      spec: { podSelector: {}, policyTypes: ["Ingress"] },
    }),
    new NetworkPolicy({
      metadata: meta("within-namespace"),
      spec: {
        podSelector: { matchLabels: { "app.kubernetes.io/part-of": "lampline" } },
        policyTypes: ["Ingress"],
        ingress: [
          { from: [inNamespace] },
          { from: [monitoring], ports: [{ port: "http" as never }, { port: "metrics" as never }] },
        ],
      },
    }),
    new NetworkPolicy({
      metadata: meta("gateways-public"),
      spec: {
        podSelector: {
          matchExpressions: [
            {
              key: "app.kubernetes.io/name",
              operator: "In",
              values: SERVICES.flatMap((shape) => (shape.public ? [shape.name] : [])),
            },
          ],
        },
        policyTypes: ["Ingress"],
        ingress: [{ ports: [{ port: "http" as never }] }],
      },
    }),
  ];
  if (overlay.redis === "in-cluster")
    policies.push(
      new NetworkPolicy({
        metadata: meta("redis-from-keda"),
        spec: {
          podSelector: selector("redis"),
          policyTypes: ["Ingress"],
          ingress: [{ from: [keda], ports: [{ port: 6379 }] }],
        },
      }),
    );
  return policies;
}

/** WebSockets stay open for hours: the proxy's idle timeouts must outlast the gateways' 10 s pings by far. */
function gatewayIngress(): Ingress {
  const paths = SERVICES.flatMap((shape) =>
    shape.public
      ? [
          {
            path: shape.public.path,
            pathType: "Prefix" as const,
            backend: { service: { name: shape.name, port: { name: "http" } } },
          },
        ]
      : [],
  );
  return new Ingress({
    metadata: {
      ...meta("gateways"),
      annotations: {
        "nginx.ingress.kubernetes.io/proxy-read-timeout": "3600",
        "nginx.ingress.kubernetes.io/proxy-send-timeout": "3600",
        "nginx.ingress.kubernetes.io/proxy-body-size": "1m",
      },
    },
    spec: { ingressClassName: "nginx", rules: [{ http: { paths } }] },
  });
}

/**
 * dev only: Redis with AOF on and noeviction on a PersistentVolumeClaim, and hashes with long field values kept in
 * the compact encoding (docs/operations.md "Redis settings").
 */
export const REDIS_ARGS = [
  "--appendonly",
  "yes",
  "--appendfsync",
  "everysec",
  "--maxmemory",
  "512mb",
  "--maxmemory-policy",
  "noeviction",
  "--hash-max-listpack-value",
  String(HASH_MAX_LISTPACK_VALUE),
  "--save",
  "",
];

/** Redis's own figures for Prometheus (memory against maxmemory: the LamplineRedisMemoryNearLimit alert). */
export const REDIS_EXPORTER_IMAGE = "oliver006/redis_exporter:v1.62.0";
const REDIS_EXPORTER_PORT = 9121;

const scrapedOn = (port: number) => ({
  "prometheus.io/scrape": "true",
  "prometheus.io/port": String(port),
  "prometheus.io/path": "/metrics",
});

/** Beside Redis in its pod (`localhost`), or on its own reading the Secret's REDIS_URL, credentials included. */
function redisExporter(address: IEnvVar): IContainer {
  return {
    name: "redis-exporter",
    image: REDIS_EXPORTER_IMAGE,
    env: [address],
    ports: [{ name: "metrics", containerPort: REDIS_EXPORTER_PORT }],
    readinessProbe: { httpGet: { path: "/health", port: "metrics" }, periodSeconds: 10 },
    resources: { requests: { cpu: "10m", memory: "32Mi" }, limits: { memory: "64Mi" } },
    securityContext: restricted,
  };
}

function redis(): (StatefulSet | Service | PodDisruptionBudget)[] {
  return [
    new StatefulSet({
      metadata: meta("redis"),
      spec: {
        serviceName: "redis",
        replicas: 1,
        selector: selector("redis"),
        template: {
          metadata: { labels: labels("redis"), annotations: scrapedOn(REDIS_EXPORTER_PORT) },
          spec: {
            securityContext: podSecurity(999),
            automountServiceAccountToken: false,
            terminationGracePeriodSeconds: 30,
            containers: [
              {
                name: "redis",
                image: "redis:7.2-alpine",
                command: ["redis-server", ...REDIS_ARGS, "--dir", "/data"],
                ports: [{ name: "redis", containerPort: 6379 }],
                readinessProbe: { exec: { command: ["redis-cli", "ping"] }, periodSeconds: 5 },
                livenessProbe: { tcpSocket: { port: "redis" }, periodSeconds: 10 },
                resources: { requests: { cpu: "100m", memory: "256Mi" }, limits: { memory: "768Mi" } },
                securityContext: restricted,
                volumeMounts: [{ name: "data", mountPath: "/data" }],
              },
              redisExporter({ name: "REDIS_ADDR", value: "redis://localhost:6379" }),
            ],
          },
        },
        volumeClaimTemplates: [
          {
            metadata: { name: "data" },
            spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "2Gi" } } },
          },
        ],
      },
    }),
    new Service({
      metadata: meta("redis"),
      spec: { selector: { "app.kubernetes.io/name": "redis" }, ports: [{ name: "redis", port: 6379 }] },
    }),
    new PodDisruptionBudget({
      metadata: meta("redis"),
      spec: { maxUnavailable: 1, selector: selector("redis") },
    }),
  ];
}

/**
 * prod: the exporter for the external Redis, one replica. A Cluster overlay has no single address to give it (its
 * Secret holds seeds): there the exporter belongs beside the Cluster (docs/operations.md).
 */
function externalRedisExporter(): Deployment {
  return new Deployment({
    metadata: meta("redis-exporter"),
    spec: {
      replicas: 1,
      selector: selector("redis-exporter"),
      template: {
        metadata: { labels: labels("redis-exporter"), annotations: scrapedOn(REDIS_EXPORTER_PORT) },
        spec: {
          securityContext: podSecurity(65534),
          automountServiceAccountToken: false,
          containers: [
            redisExporter({
              name: "REDIS_ADDR",
              valueFrom: { secretKeyRef: { name: SECRET, key: "REDIS_URL" } },
            }),
          ],
        },
      },
    },
  });
}

export type KubeObject = { apiVersion: string; kind: string; metadata?: { name?: string } } & {
  validate(): void;
  toJSON(): Record<string, unknown>;
};

/** The base with the overlay applied: every object of one environment, in apply order. */
export function renderOverlay(overlay: Overlay): KubeObject[] {
  return [
    new Namespace({ metadata: { name: NAMESPACE, labels: { "app.kubernetes.io/part-of": "lampline" } } }),
    configMap(overlay),
    agentsConfigMap(overlay),
    ...(overlay.redis === "in-cluster" ? redis() : []),
    ...(overlay.redis === "external" ? [externalRedisExporter()] : []),
    ...SERVICES.flatMap((shape) => [
      deployment(shape, overlay),
      service(shape),
      disruptionBudget(shape),
      ...(shape.scaling === "keda" ? [scaledObject(shape, overlay)] : []),
    ]),
    ...networkPolicies(overlay),
    gatewayIngress(),
  ];
}
