import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { z } from "zod";
import { protocolSchema } from "../args.js";

/**
 * A scripted scenario is data: per runtime (process start), a list of steps the generic player runs in order.
 * - `emit`: print this frame (a template: `{{A.uuid}}`, `{{id:turn1}}`, `{{now:ms}}` …, see template.ts).
 * - `expect`: wait for the next live frame of a kind (`input`, `interrupt`, `request`, `notification`, optionally
 *   with a `method`; `response`: the host's answer to a request the engine made) and bind it under `as` so later
 *   templates use the live ids (and an answer's `decision`).
 * - `sleep`: pause (lets a host act between frames). `exit`: end the process (`code`, or `signal` for a crash).
 * - `include`: the steps of another file (`{"steps": [...]}`), relative to this one.
 * A runtime plays `steps` once, then `repeat` (if any) over and over until stdin ends; otherwise it stays idle.
 */
const stepSchema = z.union([
  z.strictObject({ emit: z.unknown() }),
  z.strictObject({
    expect: z.enum(["input", "interrupt", "request", "notification", "response"]),
    method: z.string().min(1).optional(),
    as: z
      .string()
      .regex(/^[A-Za-z][A-Za-z0-9_]*$/)
      .optional(),
  }),
  z.strictObject({ sleep: z.number().int().nonnegative() }),
  z.strictObject({
    exit: z.strictObject({
      code: z.number().int().min(0).max(255).optional(),
      signal: z.string().optional(),
    }),
  }),
  z.strictObject({ include: z.string().min(1) }),
]);
export type ScenarioStep = z.infer<typeof stepSchema>;
export type PlayableStep = Exclude<ScenarioStep, { include: string }>;

const runtimeSchema = z.strictObject({ steps: z.array(stepSchema), repeat: z.array(stepSchema).optional() });

const scenarioSchema = z.strictObject({
  protocol: protocolSchema,
  description: z.string().min(1),
  runtimes: z.array(runtimeSchema).min(1),
});

const fragmentSchema = z.strictObject({ description: z.string().optional(), steps: z.array(stepSchema) });

export interface ScenarioRuntime {
  steps: PlayableStep[];
  repeat: PlayableStep[];
}

export interface Scenario {
  protocol: z.infer<typeof protocolSchema>;
  description: string;
  runtimes: ScenarioRuntime[];
}

export function loadScenario(path: string): Scenario {
  const scenario = parseFile(path, scenarioSchema);
  return {
    protocol: scenario.protocol,
    description: scenario.description,
    runtimes: scenario.runtimes.map((runtime) => ({
      steps: expandIncludes(runtime.steps, dirname(path), [path]),
      repeat: expandIncludes(runtime.repeat ?? [], dirname(path), [path]),
    })),
  };
}

function expandIncludes(steps: ScenarioStep[], directory: string, seen: string[]): PlayableStep[] {
  return steps.flatMap((step) => {
    if (!("include" in step)) return [step];
    const path = resolve(directory, step.include);
    if (seen.includes(path)) throw new Error(`scenario include cycle: ${[...seen, path].join(" -> ")}`);
    return expandIncludes(parseFile(path, fragmentSchema).steps, dirname(path), [...seen, path]);
  });
}

function parseFile<S extends z.ZodType>(path: string, schema: S): z.infer<S> {
  const parsed = schema.safeParse(JSON.parse(readFileSync(path, "utf8")));
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  throw new Error(`${path}: ${issue?.path.join(".") || "(root)"}: ${issue?.message ?? "invalid"}`);
}
