-- Advances one runtime's evidence state by compare-and-set on its applied seq, and keeps the agent's set of open
-- runtimes in step: a runtime joins it with its first advance and leaves it when it closes.
-- KEYS[1] = agent base (<p>:ev:{a:<agentId>}); derived keys share its hash tag.
-- ARGV: runtimeId, expectedSeq, newSeq, stateJson, closed ("1" | "0")
-- Returns 1 when applied, 0 when another consumer already moved the runtime on (nothing changed).
local base = KEYS[1]
local runtimeKey = base .. ":rt:" .. ARGV[1]
local current = tonumber(redis.call("HGET", runtimeKey, "seq") or "0")
if current ~= tonumber(ARGV[2]) then
  return 0
end
redis.call("HSET", runtimeKey, "seq", ARGV[3], "state", ARGV[4])
if ARGV[5] == "1" then
  redis.call("SREM", base .. ":runtimes", ARGV[1])
elseif current == 0 then
  redis.call("SADD", base .. ":runtimes", ARGV[1])
end
return 1
