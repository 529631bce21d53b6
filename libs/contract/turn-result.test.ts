import { readFileSync } from "node:fs";
import Ajv2020 from "ajv/dist/2020.js";
import { describe, expect, it } from "vitest";
import { corpusAvailable, corpusPath, corpusSkipReason } from "../../test/helpers/corpus.js";
import {
  correlatedSummaryEventSchema,
  duplicateMemberProblem,
  turnResultEventSchema,
  type ResultMember,
} from "./turn-result.js";
import { turnResultJsonSchema } from "./turn-result-schema.js";

const readJson = (...parts: string[]) => JSON.parse(readFileSync(corpusPath(...parts), "utf8")) as unknown;

const validGroup = {
  type: "event",
  kind: "turn.result",
  agentId: "agent-1",
  serverInstanceId: "transport-1",
  eventId: 7,
  machineId: "machine-1",
  payload: {
    serverInstanceId: "origin-1",
    resultId: "result-1",
    correlation: {
      scope: "group",
      inputs: [
        { deliveryId: "d-A", idempotencyKey: "key-A" },
        { deliveryId: "d-B", idempotencyKey: "key-B" },
      ],
      engineTurnId: "turn-9",
    },
    outcome: "completed",
    fullText: "Done.",
  },
};

type Event = typeof validGroup;
const mutate = (change: (event: Event) => void): unknown => {
  const copy = structuredClone(validGroup);
  change(copy);
  return copy;
};
const member = (n: number) => ({ deliveryId: `d-${n}`, idempotencyKey: `key-${n}` });

/** Variants the contract must reject, each named by the rule it breaks. */
const invalidVariants: Record<string, unknown> = {
  "group with one member": mutate((e) => (e.payload.correlation.inputs = [member(1)])),
  "input scope with two members": mutate((e) => Object.assign(e.payload.correlation, { scope: "input" })),
  "group over 64 members": mutate(
    (e) => (e.payload.correlation.inputs = Array.from({ length: 65 }, (_, i) => member(i))),
  ),
  "key with a space": mutate((e) => (e.payload.correlation.inputs[0]!.idempotencyKey = "bad key")),
  "key over 64 characters": mutate((e) => (e.payload.correlation.inputs[0]!.idempotencyKey = "k".repeat(65))),
  "empty deliveryId": mutate((e) => (e.payload.correlation.inputs[0]!.deliveryId = "")),
  "extra payload field": mutate((e) => Object.assign(e.payload, { runId: "run-1" })),
  "extra member field": mutate((e) => Object.assign(e.payload.correlation.inputs[0]!, { runId: "r" })),
  "extra envelope field": mutate((e) => Object.assign(e, { idempotencyKey: "key-A" })),
  "missing fullText": mutate((e) => Reflect.deleteProperty(e.payload, "fullText")),
  "empty fullText": mutate((e) => (e.payload.fullText = "")),
  "unknown outcome": mutate((e) => (e.payload.outcome = "done")),
  "missing resultId": mutate((e) => Reflect.deleteProperty(e.payload, "resultId")),
  "wrong kind": mutate((e) => (e.kind = "turn.summary")),
  "eventId zero": mutate((e) => (e.eventId = 0)),
  "unknown scope": mutate((e) => Object.assign(e.payload.correlation, { scope: "session" })),
};

function peerValidator(revision: string) {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  return ajv.compile(readJson("openharness", revision, "result.schema.json") as object);
}

function generatedValidator() {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  return ajv.compile(turnResultJsonSchema());
}

describe("turn.result contract", () => {
  it("accepts a valid group result and rejects every invalid variant (zod)", () => {
    expect(turnResultEventSchema.safeParse(validGroup).success).toBe(true);
    for (const [name, variant] of Object.entries(invalidVariants)) {
      expect(turnResultEventSchema.safeParse(variant).success, name).toBe(false);
    }
  });

  it("treats duplicate members as a semantic error on top of the schema", () => {
    const twice: ResultMember[] = [member(1), member(1)];
    const sameKey: ResultMember[] = [member(1), { deliveryId: "d-2", idempotencyKey: "key-1" }];
    expect(duplicateMemberProblem(twice)).toBe("duplicate deliveryId in membership");
    expect(duplicateMemberProblem(sameKey)).toBe("duplicate idempotencyKey in membership");
    expect(duplicateMemberProblem([member(1), member(2)])).toBeUndefined();
  });

  describe.skipIf(!corpusAvailable)(
    `against the peer's published schema (${corpusAvailable ? "corpus" : corpusSkipReason})`,
    () => {
      it("the generated JSON schema accepts and rejects exactly what the peer's schema does", () => {
        // Read inside the test: a skipped describe still runs its body, and the corpus may be absent.
        const fixtures = ["group-result.json", "input-result.json"].map((name) =>
          readJson("openharness", "turn-correlation-v2", name),
        );
        const peer = peerValidator("turn-correlation-v2");
        const ours = generatedValidator();
        const cases: Array<[string, unknown]> = [
          ...fixtures.map((fixture, index) => [`fixture ${index}`, fixture] as [string, unknown]),
          ["valid group", validGroup],
          ...Object.entries(invalidVariants),
        ];
        for (const [name, candidate] of cases) {
          expect(ours(candidate), name).toBe(peer(candidate));
          expect(turnResultEventSchema.safeParse(candidate).success, name).toBe(peer(candidate));
        }
        expect(fixtures.every((fixture) => peer(fixture))).toBe(true);
      });

      it("the later revision's correlated turn.summary fixtures parse with the correlated summary schema", () => {
        const peer = peerValidator("summary-correlation");
        for (const name of ["group-result.json", "input-result.json"]) {
          const fixture = readJson("openharness", "summary-correlation", name);
          expect(peer(fixture), name).toBe(true);
          expect(correlatedSummaryEventSchema.safeParse(fixture).success, name).toBe(true);
        }
      });
    },
  );
});
