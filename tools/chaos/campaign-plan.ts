import type { ReplyRoute } from "../../libs/contract/lamp-wire.js";
import type { SimProtocol } from "../../test/engine-runner/agents-file.js";
import { SERVICE_NAMES, type ServiceName } from "../../test/e2e/stack.js";
import { Prng } from "./prng.js";

/**
 * How an agent's engine answers (an engine-sim scenario played over and over):
 * - `each`: one turn per input, one result each;
 * - `fold`: steering, the second input is folded into the running turn: one group result per pair;
 * - `queue`: queueing, the second input waits for the next turn: two results per pair.
 */
export type AnswerStyle = "each" | "fold" | "queue";

export interface ChaosAgent {
  agentId: string;
  protocol: SimProtocol;
  scenario: string;
  style: AnswerStyle;
}

/** The agent kinds of a campaign; each kind runs `replicas` engines (agentId `<kind>-<n>`). */
const AGENT_KINDS: ReadonlyArray<Omit<ChaosAgent, "agentId"> & { kind: string; perReplica: number }> = [
  {
    kind: "claude-each",
    protocol: "claude-stream-json",
    scenario: "claude-answer-each-input",
    style: "each",
    perReplica: 2,
  },
  {
    kind: "codex-each",
    protocol: "codex-app-server",
    scenario: "codex-answer-each-input",
    style: "each",
    perReplica: 2,
  },
  {
    kind: "claude-fold",
    protocol: "claude-stream-json",
    scenario: "chaos-claude-steer-folded",
    style: "fold",
    perReplica: 1,
  },
  {
    kind: "claude-queue",
    protocol: "claude-stream-json",
    scenario: "chaos-claude-queued",
    style: "queue",
    perReplica: 1,
  },
  {
    kind: "codex-steer",
    protocol: "codex-app-server",
    scenario: "chaos-codex-steer-merged",
    style: "fold",
    perReplica: 1,
  },
];

/** Every agent of a campaign: more agents mean more turns in flight at once (each agent plays its turns in order). */
export function chaosAgents(replicas: number): ChaosAgent[] {
  return AGENT_KINDS.flatMap(({ kind, perReplica, ...agent }) =>
    Array.from({ length: perReplica * replicas }, (_, n) => ({ ...agent, agentId: `${kind}-${n + 1}` })),
  );
}

/** Results one turn is expected to produce when nothing goes wrong. */
export const RESULTS_PER_TURN: Record<AnswerStyle, number> = { each: 1, fold: 1, queue: 2 };

export interface PlannedInput {
  text: string;
  voiceTargetId: string;
  replyRoute: ReplyRoute;
  /** How long the voice target stays valid after the request; short ones test the `expired` suppression. */
  expiresInMs: number;
}

/**
 * When the user cancels: `pending` right after the OS registered the run (the engine may still be working),
 * `after-result` as soon as the Lamp hears the run resolved (its answer may be about to play).
 */
export type CancelMoment = "pending" | "after-result";

export interface PlannedCancel {
  /** Which of the turn's inputs is cancelled (in a pair, the older one's cancel does not silence the group). */
  input: number;
  moment: CancelMoment;
}

/** One exchange of a device with an agent: one input, or a pair sent back to back (steering / queueing). */
export interface PlannedTurn {
  index: number;
  agentId: string;
  deviceId: string;
  inputs: PlannedInput[];
  /** After the answer, the user asks "say that again" (an explicit repeat, never a duplicate). */
  askRepeat: boolean;
  /** The user cancels one of the turn's runs (never together with a repeat). */
  cancel?: PlannedCancel;
}

export type FaultAction =
  /** SIGKILL of one process of a service: replica 0 unless the service runs several (ServiceReplicas). */
  | { kind: "kill-service"; service: ServiceName; replica: number; downMs: number }
  /** SIGKILL of the redis-server, or on a Redis Cluster of master `node` (it restarts on its AOF and rejoins). */
  | { kind: "restart-redis"; downMs: number; node?: number }
  /** Redis at `maxmemory` (noeviction) for `holdMs`: writes refused with OOM, reads still answered. */
  | { kind: "squeeze-redis"; holdMs: number; node?: number }
  /** SIGSTOP of one process of a service, SIGCONT after `pausedMs` (a stalled VM, a GC pause, a debugger). */
  | { kind: "pause-service"; service: ServiceName; replica: number; pausedMs: number }
  | { kind: "lamp-drop"; deviceId: string; downMs: number }
  /** A long outage: the socket is dropped (or closed with a handshake) and the Lamp stays away for `downMs`. */
  | { kind: "lamp-outage"; deviceId: string; downMs: number; ending: "drop" | "close" }
  | { kind: "lamp-ack-late"; deviceId: string; delayMs: number; windowMs: number }
  | { kind: "lamp-no-ack"; deviceId: string; windowMs: number };
export type FaultKind = FaultAction["kind"];

/**
 * Faults on one target (a service, Redis, one Lamp) run one after another; different targets are disturbed at the
 * same time, so faults keep pace with the traffic and overlap (a service down while Redis restarts). A service's
 * replicas share its track: one of them is down at a time, and the other takes over its work.
 */
export type FaultTrack = `service:${ServiceName}` | "redis" | `lamp:${string}`;

export interface PlannedFault {
  index: number;
  track: FaultTrack;
  /** Fires once this many turns have started, `delayMs` later (a random moment inside the flow). */
  afterTurn: number;
  delayMs: number;
  action: FaultAction;
}

/** The timing every run must end within: `voiceTargetExpiresAt + graceMs + settleMs` (invariants.ts). */
export interface RunDeadlines {
  /** How long an ordinary voice target stays valid after the Lamp first sends its request. */
  voiceTargetTtlMs: number;
  /** The router's RUN_DEADLINE_GRACE_MS: a pending run ends `unknown` this long after its target expired. */
  graceMs: number;
  /** Allowance for the router's deadline sweep, and for a router or Redis that a fault took down at that moment. */
  settleMs: number;
}

/** How many processes of each service run (1 when absent). */
export type ServiceReplicas = Partial<Record<ServiceName, number>>;

/** What the campaign runs on: one redis-server, or a Redis Cluster of `clusterMasters` masters; the replicas. */
export interface Deployment {
  clusterMasters?: number;
  replicas: ServiceReplicas;
}

const SINGLE_SERVER: Deployment = { replicas: {} };

export interface CampaignPlan {
  seed: string;
  results: number;
  deployment: Deployment;
  devices: string[];
  agents: ChaosAgent[];
  turns: PlannedTurn[];
  faults: PlannedFault[];
  deadlines: RunDeadlines;
}

export interface PlanOptions {
  seed: string;
  /** Results the traffic should produce (Harness side) when nothing is lost to a fault. */
  results: number;
  /** One fault per this many results, on average. */
  resultsPerFault: number;
  /** Engines per agent kind (see chaosAgents); more replicas, more parallel traffic. */
  agentReplicas: number;
  /** Share of turns in which the user cancels one run (0–1). */
  cancelShare: number;
  /** Long Lamp outages, on top of the `resultsPerFault` faults. */
  outages: number;
  /** Length of each long outage (a Lamp away for longer than a minute, then resuming its run.update feed). */
  outageMs: number;
  voiceTargetTtlMs: number;
  runDeadlineGraceMs: number;
  /** One redis-server and one process of each service when absent. */
  deployment?: Deployment;
}

const AGENT_WEIGHTS: Record<AnswerStyle, number> = { each: 4, fold: 3, queue: 2.5 };
/** Long outages are planned by count (PlanOptions.outages), never drawn at random. */
type DrawnFaultKind = Exclude<FaultKind, "lamp-outage">;
const FAULT_WEIGHTS: Record<DrawnFaultKind, number> = {
  "kill-service": 45,
  "restart-redis": 10,
  "squeeze-redis": 6,
  "pause-service": 8,
  "lamp-drop": 20,
  "lamp-ack-late": 13,
  "lamp-no-ack": 12,
};
const FAULT_KINDS = Object.keys(FAULT_WEIGHTS) as DrawnFaultKind[];
/** Sweep interval of the router's deadline check plus a fault (router kill, Redis restart) hitting it. */
const RUN_END_SETTLE_MS = 15_000;

/** The whole campaign as data: the same seed and sizes always give the same traffic and fault schedule. */
export function planCampaign(options: PlanOptions): CampaignPlan {
  const root = Prng.fromSeed(options.seed);
  const devices = Array.from(
    { length: Math.min(8, Math.max(2, Math.ceil(options.results / 10))) },
    (_, index) => `lamp-${index + 1}`,
  );
  const agents = chaosAgents(options.agentReplicas);
  const turns = planCancels(
    root.fork("cancels"),
    planTurns(root.fork("traffic"), devices, agents, options),
    options,
  );
  const deployment = options.deployment ?? SINGLE_SERVER;
  const faults = planFaults(root.fork("faults"), devices, turns.length, options, deployment);
  return {
    seed: options.seed,
    results: options.results,
    deployment,
    devices,
    agents,
    turns,
    faults,
    deadlines: {
      voiceTargetTtlMs: options.voiceTargetTtlMs,
      graceMs: options.runDeadlineGraceMs,
      settleMs: RUN_END_SETTLE_MS,
    },
  };
}

function planTurns(
  random: Prng,
  devices: string[],
  agents: ChaosAgent[],
  options: PlanOptions,
): PlannedTurn[] {
  const weights = Object.fromEntries(agents.map((agent) => [agent.agentId, AGENT_WEIGHTS[agent.style]]));
  const agentById = new Map(agents.map((agent) => [agent.agentId, agent]));
  const turns: PlannedTurn[] = [];
  let expected = 0;
  while (expected < options.results) {
    const agent = agentById.get(random.weighted(weights)) as ChaosAgent;
    const index = turns.length;
    const deviceId = random.pick(devices);
    const pair = agent.style !== "each";
    const mixedTargets = pair && random.chance(0.04);
    const inputs = Array.from({ length: pair ? 2 : 1 }, (_, k) =>
      planInput(random, `chaos ${options.seed} turn ${index} input ${k + 1}: ${agent.agentId}`, {
        voiceTargetId: mixedTargets && k === 1 ? "target-2" : "target-1",
        voiceTargetTtlMs: options.voiceTargetTtlMs,
      }),
    );
    turns.push({ index, agentId: agent.agentId, deviceId, inputs, askRepeat: random.chance(0.05) });
    expected += RESULTS_PER_TURN[agent.style];
  }
  return turns;
}

function planInput(
  random: Prng,
  text: string,
  fixed: { voiceTargetId: string; voiceTargetTtlMs: number },
): PlannedInput {
  const replyRoute = random.weighted({ voice: 92, display: 4, silent: 4 } satisfies Record<
    ReplyRoute,
    number
  >);
  const expiresInMs = random.chance(0.03) ? 200 : fixed.voiceTargetTtlMs;
  return { text, voiceTargetId: fixed.voiceTargetId, replyRoute, expiresInMs };
}

/**
 * `cancelShare` of the turns (distinct, seeded) cancel one of their runs; the moments alternate, so even a small
 * campaign cancels both a pending run and one whose answer is about to play. A cancelled turn asks no repeat.
 */
function planCancels(random: Prng, turns: PlannedTurn[], options: PlanOptions): PlannedTurn[] {
  const count = Math.min(turns.length, Math.round(turns.length * options.cancelShare));
  const chosen = shuffle(
    random,
    turns.map((turn) => turn.index),
  ).slice(0, count);
  const moments = new Map(
    chosen.map((index, k): [number, CancelMoment] => [index, k % 2 === 0 ? "pending" : "after-result"]),
  );
  return turns.map((turn) => {
    const moment = moments.get(turn.index);
    if (moment === undefined) return turn;
    return { ...turn, askRepeat: false, cancel: { input: random.int(0, turn.inputs.length - 1), moment } };
  });
}

function planFaults(
  random: Prng,
  devices: string[],
  turnCount: number,
  options: PlanOptions,
  deployment: Deployment,
): PlannedFault[] {
  const count = Math.max(1, Math.round(options.results / options.resultsPerFault));
  // The first faults cover every kind once (in a seeded order), so even a small campaign exercises each.
  const kinds = shuffle(random, [...FAULT_KINDS]);
  const moment = () => ({
    afterTurn: random.int(1, Math.max(1, turnCount - 1)),
    delayMs: random.int(0, 2_000),
  });
  const drawn = Array.from({ length: count }, (_, k) => ({
    ...moment(),
    action: faultAction(random, kinds[k] ?? random.weighted(FAULT_WEIGHTS), devices, deployment),
  }));
  const outages = Array.from({ length: options.outages }, () => ({
    ...moment(),
    action: {
      kind: "lamp-outage" as const,
      deviceId: random.pick(devices),
      downMs: options.outageMs,
      ending: random.chance(0.5) ? ("drop" as const) : ("close" as const),
    },
  }));
  return [...drawn, ...outages]
    .sort((a, b) => a.afterTurn - b.afterTurn || a.delayMs - b.delayMs)
    .map((fault, index) => ({ index, track: trackOf(fault.action), ...fault }));
}

function faultAction(
  random: Prng,
  kind: DrawnFaultKind,
  devices: string[],
  deployment: Deployment,
): FaultAction {
  switch (kind) {
    case "kill-service": {
      const service = random.pick(SERVICE_NAMES);
      const replicas = deployment.replicas[service] ?? 1;
      // One replica draws nothing more, so a single-replica plan stays what its seed always gave.
      const replica = replicas > 1 ? random.int(0, replicas - 1) : 0;
      return { kind, service, replica, downMs: random.int(0, 3_000) };
    }
    case "pause-service": {
      const service = random.pick(SERVICE_NAMES);
      const replicas = deployment.replicas[service] ?? 1;
      const replica = replicas > 1 ? random.int(0, replicas - 1) : 0;
      return { kind, service, replica, pausedMs: random.int(1_000, 8_000) };
    }
    case "squeeze-redis": {
      const holdMs = random.int(2_000, 10_000);
      const masters = deployment.clusterMasters;
      return masters === undefined ? { kind, holdMs } : { kind, holdMs, node: random.int(0, masters - 1) };
    }
    case "restart-redis": {
      const downMs = random.int(300, 3_000);
      const masters = deployment.clusterMasters;
      return masters === undefined ? { kind, downMs } : { kind, downMs, node: random.int(0, masters - 1) };
    }
    case "lamp-drop":
      return { kind, deviceId: random.pick(devices), downMs: random.int(100, 4_000) };
    case "lamp-ack-late":
      return {
        kind,
        deviceId: random.pick(devices),
        delayMs: random.int(1_000, 8_000),
        windowMs: random.int(2_000, 10_000),
      };
    case "lamp-no-ack":
      return { kind, deviceId: random.pick(devices), windowMs: random.int(1_000, 6_000) };
  }
}

function trackOf(action: FaultAction): FaultTrack {
  if (action.kind === "kill-service" || action.kind === "pause-service") return `service:${action.service}`;
  if (action.kind === "restart-redis" || action.kind === "squeeze-redis") return "redis";
  return `lamp:${action.deviceId}`;
}

function shuffle<T>(random: Prng, items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = random.int(0, i);
    [items[i], items[j]] = [items[j] as T, items[i] as T];
  }
  return items;
}

/** One line per fault, for the report and docs/reliability.md. */
export function describeFault(fault: PlannedFault): string {
  const at = `after turn ${fault.afterTurn} +${fault.delayMs} ms`;
  const action = fault.action;
  switch (action.kind) {
    case "kill-service":
      return `${at}: SIGKILL ${action.service}${action.replica === 0 ? "" : `#${action.replica}`}, restart after ${action.downMs} ms`;
    case "restart-redis": {
      const target = action.node === undefined ? "redis-server" : `Redis Cluster node ${action.node}`;
      return `${at}: SIGKILL ${target}, restart after ${action.downMs} ms`;
    }
    case "squeeze-redis": {
      const target = action.node === undefined ? "redis-server" : `Redis Cluster node ${action.node}`;
      return `${at}: ${target} at maxmemory (noeviction) for ${action.holdMs} ms`;
    }
    case "pause-service":
      return `${at}: SIGSTOP ${action.service}${action.replica === 0 ? "" : `#${action.replica}`}, SIGCONT after ${action.pausedMs} ms`;
    case "lamp-drop":
      return `${at}: drop ${action.deviceId}'s WebSocket, reconnect after ${action.downMs} ms`;
    case "lamp-outage":
      return `${at}: ${action.ending} ${action.deviceId}'s WebSocket, outage of ${action.downMs} ms, then resume run.updates`;
    case "lamp-ack-late":
      return `${at}: ${action.deviceId} acks ${action.delayMs} ms late for ${action.windowMs} ms`;
    case "lamp-no-ack":
      return `${at}: ${action.deviceId} never acks for ${action.windowMs} ms`;
  }
}
