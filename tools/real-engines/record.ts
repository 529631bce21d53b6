import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { readCommandLine } from "../cli-args.js";
import { installEngine } from "./engine-install.js";
import { ENGINE_PINS, type RealEngine } from "./pins.js";
import { probeConversation } from "./probe-conversation.js";
import { projectRoot } from "./project-root.js";

const HELP = [
  "usage: npm run engines:record",
  "",
  "Plays the probe conversation (a tool-use turn, a second input written mid-turn) with each pinned CLI and writes",
  "it to test/fixtures/real-engines/<engine>-<version>-steer.ndjson: one {dir, frame} line per frame, both ways.",
  "The recordings are the project's own output; test/corpus-replay/real-engine-recordings.test.ts replays them.",
  "",
  "  -h, --help   this text",
].join("\n");

readCommandLine({ name: "engines:record", help: HELP, options: {}, schema: z.strictObject({}) });

const folder = join(projectRoot, "test", "fixtures", "real-engines");
mkdirSync(folder, { recursive: true });
for (const engine of Object.keys(ENGINE_PINS) as RealEngine[]) {
  const { version } = ENGINE_PINS[engine];
  installEngine(engine, version);
  const lines = await probeConversation(engine, version);
  const path = join(folder, `${engine}-${version}-steer.ndjson`);
  writeFileSync(path, lines.map((line) => JSON.stringify(line)).join("\n") + "\n");
  process.stdout.write(`${path}: ${lines.length} lines\n`);
}
