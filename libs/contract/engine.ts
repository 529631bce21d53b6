import { z } from "zod";

/** The four engine wire formats this project reads (docs/evidence.md). */
export const engineKindSchema = z.enum([
  "claude-stream-json",
  "codex-app-server",
  "claude-transcript",
  "codex-rollout",
]);
export type EngineKind = z.infer<typeof engineKindSchema>;

/** Seed 004 correlation strengths, strongest first. */
export const correlationKindSchema = z.enum([
  "native_exact",
  "native_scoped",
  "ordinal",
  "fingerprint",
  "synthetic",
]);
export type CorrelationKind = z.infer<typeof correlationKindSchema>;

/** How the runner answers an engine's approval requests (commands, patches, tool permissions): default deny. */
export const approvalPolicySchema = z.enum(["deny", "allow"]);
export type ApprovalPolicy = z.infer<typeof approvalPolicySchema>;

export const agentConfigSchema = z.strictObject({
  agentId: z.string().min(1).max(128),
  machineId: z.string().min(1).max(128),
  engine: engineKindSchema,
  /** argv of the engine process (stream-json and app-server engines). */
  command: z.array(z.string().min(1)).min(1).optional(),
  /** Session file to follow (transcript engines). */
  path: z.string().min(1).optional(),
  /** Engine requests: approvals answered by this policy (absent: deny); questions for a user are refused. */
  approvals: approvalPolicySchema.optional(),
});
export type AgentConfig = z.infer<typeof agentConfigSchema>;

export const agentsFileSchema = z.array(agentConfigSchema).superRefine((agents, context) => {
  const seen = new Set<string>();
  agents.forEach((agent, index) => {
    if (seen.has(agent.agentId))
      context.addIssue({ code: "custom", path: [index, "agentId"], message: "duplicate" });
    seen.add(agent.agentId);
    const tails = agent.engine === "claude-transcript" || agent.engine === "codex-rollout";
    if (tails && !agent.path)
      context.addIssue({ code: "custom", path: [index, "path"], message: "required" });
    if (!tails && !agent.command)
      context.addIssue({ code: "custom", path: [index, "command"], message: "required" });
  });
});
