import { describe, expect, it } from "vitest";
import { classKeys, expectCommittedInclude, layoutKeys } from "../../test/helpers/key-layout-check.js";
import { AGENT_KEY_INCLUDES, AGENT_KEYS, AgentKeys } from "./agent-keys.js";
import { Keyspace } from "./keyspace.js";

describe("the agent key layout has one home", () => {
  it("AgentKeys names every key of an agent exactly as AGENT_KEYS spells it, and no other", () => {
    const agent = new AgentKeys(new Keyspace("p"), "claude-1");
    expect(classKeys(agent)).toEqual(layoutKeys(agent.base, AGENT_KEYS));
    expect(agent.runtime("rt-1")).toBe("p:ev:{a:claude-1}:rt:rt-1");
    expect(agent.deliveryMarker("dl-1")).toBe("p:ev:{a:claude-1}:runner:delivery:dl-1");
  });

  it.each(AGENT_KEY_INCLUDES.map((include) => [include.file, include] as const))(
    "%s is what npm run lua:keys generates from the layout",
    (_file, include) => expectCommittedInclude(include),
  );
});
