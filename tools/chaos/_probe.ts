import { E2EStack, SERVICE_NAMES } from "../../test/e2e/stack.js";
const t0 = Date.now();
const stack = await E2EStack.start({
  label: "probe",
  redisUrl: "redis://127.0.0.1:6379",
  agents: [{ agentId: "claude-1", protocol: "claude-stream-json", scenario: "claude-answer-each-input" }],
});
console.log("started", Date.now() - t0);
for (const name of SERVICE_NAMES) {
  const t = Date.now();
  await stack.restart(name);
  console.log(name, "restart health", Date.now() - t);
}
const t1 = Date.now();
await stack.waitUntilReady();
console.log("ready", Date.now() - t1);
await stack.stop();
