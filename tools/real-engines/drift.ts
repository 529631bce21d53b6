import { z } from "zod";
import { readCommandLine } from "../cli-args.js";
import { installEngine, latestVersion } from "./engine-install.js";
import { addShape, shapeDrift, type FrameShapes } from "./frame-shapes.js";
import { ENGINE_PINS, type RealEngine } from "./pins.js";
import { probeConversation, type ConversationLine } from "./probe-conversation.js";

const HELP = [
  "usage: npm run engines:drift [-- --engine claude|codex]",
  "",
  "Installs the newest Claude Code and Codex the registry offers beside the pins, plays one fixed conversation",
  "(a tool-use turn with a second input written mid-turn) against the pinned and the newest version, and lists the",
  "frame kinds and fields that appeared or disappeared. Then run `npm run test:real-engines` with the new pins to",
  "see whether the adapters still hold. Exit 0 when nothing drifted, 1 when something did.",
  "",
  "  --engine <name>   only this engine",
  "  -h, --help        this text",
].join("\n");

const args = readCommandLine({
  name: "engines:drift",
  help: HELP,
  options: { engine: { type: "string" } },
  schema: z.strictObject({ engine: z.enum(["claude", "codex"]).optional() }),
});

const shapesOf = (lines: ConversationLine[]): FrameShapes => {
  const shapes: FrameShapes = new Map();
  for (const line of lines) if (line.dir === "in") addShape(shapes, line.frame);
  return shapes;
};

let drifted = false;
for (const engine of (args.engine ? [args.engine] : Object.keys(ENGINE_PINS)) as RealEngine[]) {
  const pinned = ENGINE_PINS[engine].version;
  const newest = latestVersion(engine);
  installEngine(engine, pinned);
  installEngine(engine, newest);
  process.stdout.write(`${engine}: pinned ${pinned}, newest ${newest}\n`);
  if (newest === pinned) continue;
  const before = shapesOf(await probeConversation(engine, pinned));
  const after = shapesOf(await probeConversation(engine, newest));
  for (const change of shapeDrift(before, after)) {
    drifted = true;
    process.stdout.write(`  ${change.kind}\n`);
    for (const path of change.added) process.stdout.write(`    + ${path}\n`);
    for (const path of change.removed) process.stdout.write(`    - ${path}\n`);
  }
}
process.exit(drifted ? 1 : 0);
