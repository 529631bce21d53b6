-- Advances one runtime's evidence state by compare-and-set on its applied seq, and keeps the agent's set of open
-- runtimes in step: a runtime joins it with its first advance and leaves it when it closes. The compare and the set
-- are one step, so two consumers never both advance a runtime from the same seq.
-- A closed runtime's state expires closedRetentionMs after it closed: a record redelivered within that time is still
-- recognised as applied, and no engine restart leaves a hash behind for ever.
-- KEYS[1] = agent base (<p>:ev:{a:<agentId>}); derived keys share its hash tag.
-- Args {runtimeId, expectedSeq, newSeq, stateJson, closed, closedRetentionMs}. Answers {outcome = 'applied'}, or
-- {outcome = 'moved_on'} when another consumer already moved the runtime on (nothing changed).
--!include agent-keys.lua
local base = KEYS[1]
local args = cjson.decode(ARGV[1])
local runtimeKey = agent_keys.runtime(base, args.runtimeId)
local current = tonumber(redis.call("HGET", runtimeKey, "seq") or "0")
if current ~= args.expectedSeq then
  return cjson.encode({outcome = "moved_on"})
end
redis.call("HSET", runtimeKey, "seq", args.newSeq, "state", args.stateJson)
if args.closed then
  redis.call("PEXPIRE", runtimeKey, args.closedRetentionMs)
  redis.call("SREM", agent_keys.openRuntimes(base), args.runtimeId)
elseif current == 0 then
  redis.call("SADD", agent_keys.openRuntimes(base), args.runtimeId)
end
return cjson.encode({outcome = "applied"})
