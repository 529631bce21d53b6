/**
 * The two overlays of the Kubernetes base: what differs between a developer's cluster and production. Everything
 * else (services, probes, security, scalers) is the base in `manifests.ts`, the same for both.
 */
export interface Overlay {
  name: "dev" | "prod" | "prod-cluster";
  /** The image every container runs, set in the overlay's kustomization (`images:`), never in the base. */
  image: { newName: string; newTag: string };
  /**
   * dev: a Redis StatefulSet in the namespace; prod: an external Redis named by the Secret; prod-cluster: an
   * external Redis Cluster whose seed nodes the Secret names (the scalers then use KEDA's cluster triggers).
   */
  redis: "in-cluster" | "external" | "external-cluster";
  /** The machine the engine-runner is (its consumer group is `engine-runner.<machineId>`). */
  machineId: string;
  /** Fixed replicas of the services KEDA does not scale. */
  replicas: { gateways: number; router: number };
  /** Ceiling of every ScaledObject. */
  maxReplicas: number;
  logLevel: string;
  /** The agents file mounted for the engine-runner and the Harness gateway. */
  agents: unknown[];
}

/** engine-sim as the image holds it: compiled (tools/deploy/compile.sh), with the scenario fixtures beside it. */
const engineSim = (protocol: string, scenario: string) => [
  "node",
  "tools/engine-sim/main.js",
  "--protocol",
  protocol,
  "--scenario",
  `test/fixtures/engine-scenarios/${scenario}.json`,
];

const PROD: Overlay = {
  name: "prod",
  image: { newName: "ghcr.io/lampline/lampline", newTag: "0.1.0" },
  redis: "external",
  machineId: "prod-machine-1",
  replicas: { gateways: 2, router: 2 },
  maxReplicas: 10,
  logLevel: "info",
  agents: [
    {
      agentId: "claude",
      machineId: "prod-machine-1",
      engine: "claude-stream-json",
      command: [
        "claude",
        "-p",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--replay-user-messages",
        "--verbose",
      ],
    },
  ],
};

export const OVERLAYS: readonly Overlay[] = [
  {
    name: "dev",
    image: { newName: "lampline", newTag: "dev" },
    redis: "in-cluster",
    machineId: "dev-machine",
    replicas: { gateways: 1, router: 1 },
    maxReplicas: 3,
    logLevel: "info",
    agents: [
      {
        agentId: "claude-demo",
        machineId: "dev-machine",
        engine: "claude-stream-json",
        command: engineSim("claude-stream-json", "claude-answer-each-input"),
      },
    ],
  },
  PROD,
  // The same production deployment on a Redis Cluster.
  { ...PROD, name: "prod-cluster", redis: "external-cluster" },
];
