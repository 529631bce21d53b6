-- Persists identity bindings of one runtime before the evidence that depends on them is emitted. A binding that
-- already exists is kept (reprocessing finds it); one that exists with other content is counted as a conflict.
-- KEYS[1] = agent base (<p>:ev:{a:<agentId>}). ARGV: runtimeId, retentionMs, then field, json pairs.
-- Returns the number of conflicting bindings.
local key = KEYS[1] .. ":bindings:" .. ARGV[1]
local conflicts = 0
for index = 3, #ARGV, 2 do
  local field, json = ARGV[index], ARGV[index + 1]
  if redis.call("HSETNX", key, field, json) == 0 and redis.call("HGET", key, field) ~= json then
    conflicts = conflicts + 1
  end
end
redis.call("PEXPIRE", key, ARGV[2])
return conflicts
