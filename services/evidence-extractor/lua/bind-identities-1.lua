-- Persists identity bindings before the evidence that depends on them is emitted, in two places that must agree:
-- the runtime's own hash (what this runtime bound) and the agent's mapping store keyed by native scope (what a
-- resumed session's next runtime finds). Atomic so a crash never leaves a binding in one and not the other.
-- A binding that already exists is kept (reprocessing finds it). Conflicts: a runtime row with other content, or a
-- native scope already bound to another app id.
-- KEYS[1] = agent base (<p>:ev:{a:<agentId>}); derived keys share its hash tag.
-- ARGV: runtimeId, retentionMs, then quadruples of field, json, scopeKey, appEntityId.
-- Returns the number of conflicting bindings.
local runtimeKey = KEYS[1] .. ":bindings:" .. ARGV[1]
local identityKey = KEYS[1] .. ":identity"
local conflicts = 0
for index = 3, #ARGV, 4 do
  local field, json, scopeKey, appEntityId = ARGV[index], ARGV[index + 1], ARGV[index + 2], ARGV[index + 3]
  if redis.call("HSETNX", runtimeKey, field, json) == 0 and redis.call("HGET", runtimeKey, field) ~= json then
    conflicts = conflicts + 1
  end
  if redis.call("HSETNX", identityKey, scopeKey, json) == 0 then
    local existing = cjson.decode(redis.call("HGET", identityKey, scopeKey))
    if existing.appEntityId ~= appEntityId then
      conflicts = conflicts + 1
    end
  end
end
redis.call("PEXPIRE", runtimeKey, ARGV[2])
redis.call("PEXPIRE", identityKey, ARGV[2])
return conflicts
