import { describe, expect, it } from "vitest";
import { readRunUpdateNotice } from "./run-update.js";

const update = {
  runId: "run-1",
  requestId: "11111111-1111-4111-8111-111111111111",
  state: "resolved",
  change: "resolved",
  outcome: "completed",
  resultId: "result-1",
  at: 1_000,
};

describe("readRunUpdateNotice", () => {
  it("reads the update a notice carries", () => {
    const message = JSON.stringify({ deviceId: "lamp-1", updateId: 7, update });
    expect(readRunUpdateNotice(message)).toEqual({
      deviceId: "lamp-1",
      notice: { deviceId: "lamp-1", updateId: 7, update },
    });
  });

  it("still names the device of a bare device-id notice or one whose update does not parse, without an update", () => {
    expect(readRunUpdateNotice("lamp-1")).toEqual({ deviceId: "lamp-1" });
    const unknownField = JSON.stringify({ deviceId: "lamp-2", updateId: 8, update: { ...update, extra: 1 } });
    expect(readRunUpdateNotice(unknownField)).toEqual({ deviceId: "lamp-2" });
    expect(readRunUpdateNotice(JSON.stringify({ deviceId: "lamp-3", updateId: 0, update }))).toEqual({
      deviceId: "lamp-3",
    });
  });
});
