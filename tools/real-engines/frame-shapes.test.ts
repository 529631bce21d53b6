import { describe, expect, it } from "vitest";
import { addShape, shapeDrift, type FrameShapes } from "./frame-shapes.js";

const shapesOf = (...frames: Record<string, unknown>[]): FrameShapes => {
  const shapes: FrameShapes = new Map();
  for (const frame of frames) addShape(shapes, frame);
  return shapes;
};

describe("frame shapes for protocol drift", () => {
  it("lists fields that appeared or disappeared per frame kind, ignoring values", () => {
    const pinned = shapesOf(
      { type: "attachment", attachment: { type: "queued_command", origin: { kind: "human" } } },
      { method: "turn/completed", params: { turn: { id: "t1" } } },
      { id: 3, result: {} },
    );
    const newest = shapesOf(
      { type: "attachment", attachment: { type: "queued_command", source_uuid: "u" } },
      { method: "turn/completed", params: { turn: { id: "t2" } } },
      { id: 4, result: {} },
      { type: "system", subtype: "init", tools: [{ name: "Bash" }] },
    );
    expect(shapeDrift(pinned, newest)).toEqual([
      {
        kind: "attachment",
        added: ["attachment.source_uuid"],
        removed: ["attachment.origin", "attachment.origin.kind"],
      },
      { kind: "system/init", added: ["subtype", "tools", "tools[].name", "type"], removed: [] },
    ]);
  });
});
