import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AgentKeys } from "../../libs/redis/agent-keys.js";
import { createTestRedis, type TestRedis } from "../../test/helpers/test-redis.js";
import { EvidenceStore } from "./evidence-store.js";
import { bindingScopeKey, type IdentityBinding } from "./identity-binding.js";

const AGENT = "agent-retention";
const RUNTIME = "runtime-long-lived";
const RETENTION_MS = 60_000;
const T0 = Date.UTC(2026, 11, 3, 8, 0, 0);

let t: TestRedis;
let clock = T0;
let store: EvidenceStore;

beforeEach(() => {
  t = createTestRedis("binding-retention");
  clock = T0;
  store = new EvidenceStore(t.redis, t.keys, RETENTION_MS, () => clock);
});

afterEach(async () => {
  await t.cleanup();
});

/** A message binding (our deliveryId): its own app id is its scope, so each one is one row. */
function message(deliveryId: string): IdentityBinding {
  return {
    id: `binding-${deliveryId}`,
    appEntityKind: "message",
    appEntityId: deliveryId,
    provider: "claude-stream-json",
    providerSessionId: RUNTIME,
    nativeKind: null,
    nativeRef: null,
    scope: {
      threadId: "thread:1",
      runId: null,
      parentNodeId: null,
      providerThreadId: null,
      providerTurnId: null,
    },
    correlation: "synthetic",
    firstRawEventId: `${RUNTIME}:1`,
    createdAt: new Date(T0).toISOString(),
    updatedAt: new Date(T0).toISOString(),
  };
}

const agentKeys = () => new AgentKeys(t.keys, AGENT);
async function stored() {
  const [identity, identityIndex] = await Promise.all([
    t.redis.hkeys(agentKeys().identity),
    t.redis.zcard(agentKeys().identitySightings),
  ]);
  return { identity: identity.sort(), identityIndex };
}

describe("identity bindings of a long-lived agent stay bounded", () => {
  it("a binding unseen for the retention is removed by a later bind step; one seen again, or younger, stays", async () => {
    const [old, seenAgain, young, fresh] = ["d-old", "d-seen-again", "d-young", "d-fresh"].map(message) as [
      IdentityBinding,
      IdentityBinding,
      IdentityBinding,
      IdentityBinding,
    ];
    expect(await store.persistBindings(AGENT, [old, seenAgain])).toBe(0);
    clock = T0 + RETENTION_MS / 2;
    expect(await store.persistBindings(AGENT, [seenAgain, young])).toBe(0);
    clock = T0 + RETENTION_MS + 1;
    expect(await store.persistBindings(AGENT, [fresh])).toBe(0);

    const kept = [seenAgain, young, fresh];
    expect(await stored()).toEqual({ identity: kept.map(bindingScopeKey).sort(), identityIndex: 3 });
  });

  it("bind steps over thirty retentions keep only the last retention's bindings", async () => {
    const stepMs = RETENTION_MS / 10;
    for (let step = 0; step < 300; step += 1) {
      clock = T0 + step * stepMs;
      await store.persistBindings(AGENT, [message(`d-${step}-a`), message(`d-${step}-b`)]);
    }
    const { identity, identityIndex } = await stored();
    // Steps within the retention (the last 10, and the one exactly at its edge) with two bindings each.
    expect(identity).toHaveLength(22);
    expect(identityIndex).toBe(22);
    expect(identity).toContain(bindingScopeKey(message("d-299-a")));
    expect(identity).not.toContain(bindingScopeKey(message("d-288-a")));
  });
});

describe("the expiry of an agent's binding keys", () => {
  const keysOf = () => [agentKeys().identity, agentKeys().identitySightings];
  const ttls = () => Promise.all(keysOf().map((key) => t.redis.pttl(key)));

  it("is renewed to one and a half retentions only when less than one is left, so a key outlives its last binding by a retention", async () => {
    await store.persistBindings(AGENT, [message("d-first")]);
    for (const ttl of await ttls()) {
      expect(ttl).toBeGreaterThan(RETENTION_MS);
      expect(ttl).toBeLessThanOrEqual(RETENTION_MS * 1.5);
    }
    // More than one retention left: a later binding leaves every expiry where it was.
    await Promise.all(keysOf().map((key) => t.redis.pexpire(key, RETENTION_MS + 5_000)));
    await store.persistBindings(AGENT, [message("d-second")]);
    for (const ttl of await ttls()) expect(ttl).toBeLessThanOrEqual(RETENTION_MS + 5_000);
    // Less than one left: the next binding renews both.
    await Promise.all(keysOf().map((key) => t.redis.pexpire(key, RETENTION_MS - 5_000)));
    await store.persistBindings(AGENT, [message("d-third")]);
    for (const ttl of await ttls()) expect(ttl).toBeGreaterThan(RETENTION_MS);
  });
});
