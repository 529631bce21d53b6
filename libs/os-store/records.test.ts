import { describe, expect, it } from "vitest";
import { OsDeviceKeys, resultKeyOf } from "./os-keys.js";
import { parseResultRecord } from "./result-record.js";
import { parseRunRecord } from "./run-record.js";
import { Keyspace } from "../redis/keyspace.js";

const storedRun = {
  runId: "run-1",
  deviceId: "lamp-1",
  agentId: "agent-1",
  machineId: "machine-1",
  idempotencyKey: "key-1",
  requestId: "request-1",
  text: "a question",
  voiceTargetId: "kitchen",
  voiceTargetExpiresAt: "1700000060000",
  replyRoute: "voice",
  state: "pending",
  createdAt: "1700000000000",
};

const storedResult = {
  resultId: "r-1",
  serverInstanceId: "instance-1",
  deviceId: "lamp-1",
  agentId: "agent-1",
  outcome: "completed",
  fullText: "done",
  members: JSON.stringify([{ runId: "run-1", deliveryId: "delivery-1", idempotencyKey: "key-1" }]),
  contentHash: "0".repeat(64),
  storedAt: "1700000001000",
};

describe("OS store records", () => {
  it("an empty hash reads as an absent record, for runs and results", () => {
    expect(parseRunRecord({})).toBeUndefined();
    expect(parseResultRecord({})).toBeUndefined();
  });

  it("a stored run reads with its numbers and optional fields typed", () => {
    const run = parseRunRecord({ ...storedRun, cancelledAt: "1700000002000" });
    expect(run).toMatchObject({
      voiceTargetExpiresAt: 1700000060000,
      createdAt: 1700000000000,
      cancelledAt: 1700000002000,
    });
    expect(run).not.toHaveProperty("resolvedAt");
  });

  it("a run missing a required field is a store bug and throws", () => {
    const { idempotencyKey: _dropped, ...incomplete } = storedRun;
    expect(() => parseRunRecord(incomplete)).toThrow();
  });

  it("a stored result's members come from its JSON; an empty member list is refused", () => {
    expect(parseResultRecord(storedResult)?.members).toEqual([
      { runId: "run-1", deliveryId: "delivery-1", idempotencyKey: "key-1" },
    ]);
    expect(() => parseResultRecord({ ...storedResult, members: "[]" })).toThrow();
  });

  it("every key of a device shares its base (one hash slot), results keyed by instance and id", () => {
    const device = new OsDeviceKeys(new Keyspace("p"), "lamp-1");
    const resultKey = resultKeyOf("instance-1", "r-1");
    for (const key of [
      device.run("run-1"),
      device.result(resultKey),
      device.outbox(resultKey),
      device.playback("pb"),
    ])
      expect(key.startsWith(`${device.base}:`)).toBe(true);
    expect(resultKey).toBe("instance-1|r-1");
  });
});
