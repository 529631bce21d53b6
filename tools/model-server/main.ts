import { z } from "zod";
import { readCommandLine } from "../cli-args.js";
import { ScriptedModelServer } from "./model-server.js";
import { loadModelScenario } from "./scenario.js";

const HELP = [
  "usage: model-server --scenario <file.json> --record <requests.jsonl> [--port <n>]",
  "",
  "A scripted model on 127.0.0.1 for the real engine CLIs: POST /v1/messages (Anthropic) and POST /v1/responses",
  "(OpenAI), streaming. Replies come from the scenario (docs/real-engines.md); every request is appended to --record.",
  "",
  "  --scenario <file>   replies to give, in order (tests/real-engines/model-scenarios/)",
  "  --record <file>     JSONL of every request: the user texts it carried and what was answered",
  "  --port <n>          port to listen on (default: any free port, printed on stdout)",
  "  -h, --help          this text",
].join("\n");

const args = readCommandLine({
  name: "model-server",
  help: HELP,
  options: { scenario: { type: "string" }, record: { type: "string" }, port: { type: "string" } },
  schema: z.strictObject({
    scenario: z.string().min(1),
    record: z.string().min(1),
    port: z.coerce.number().int().min(0).max(65_535).default(0),
  }),
});
const server = new ScriptedModelServer(loadModelScenario(args.scenario), args.record);
process.stdout.write(`${await server.listen(args.port)}\n`);
for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => void server.close());
