-- Persists identity bindings before the evidence that depends on them is emitted, in two places that must agree:
-- the runtime's own hash (what this runtime bound) and the agent's mapping store keyed by native scope (what a
-- resumed session's next runtime finds). Atomic so a crash never leaves a binding in one and not the other.
-- A binding that already exists is kept (reprocessing finds it). Conflicts: a runtime row with other content, or a
-- native scope already bound to another app id.
-- Retention: each binding's last sighting is its score in an index beside each hash (`:identity-at`,
-- `:bindings-at:<runtimeId>`); a binding not seen for retentionMs is removed here, a bounded number per call (twice
-- the bindings written, so removal keeps pace with writing), and the whole keys expire when the agent goes quiet
-- (between one and one and a half retentions after its last binding).
-- KEYS[1] = agent base (<p>:ev:{a:<agentId>}); derived keys share its hash tag.
-- ARGV: runtimeId, retentionMs, now (epoch ms), then quadruples of field, json, scopeKey, appEntityId.
-- Returns the number of conflicting bindings.
local runtimeKey = KEYS[1] .. ":bindings:" .. ARGV[1]
local runtimeIndex = KEYS[1] .. ":bindings-at:" .. ARGV[1]
local identityKey = KEYS[1] .. ":identity"
local identityIndex = KEYS[1] .. ":identity-at"
local retention, now = tonumber(ARGV[2]), tonumber(ARGV[3])
local conflicts = 0
for index = 4, #ARGV, 4 do
  local field, json, scopeKey, appEntityId = ARGV[index], ARGV[index + 1], ARGV[index + 2], ARGV[index + 3]
  if redis.call("HSETNX", runtimeKey, field, json) == 0 and redis.call("HGET", runtimeKey, field) ~= json then
    conflicts = conflicts + 1
  end
  redis.call("ZADD", runtimeIndex, now, field)
  if redis.call("HSETNX", identityKey, scopeKey, json) == 0 then
    local existing = cjson.decode(redis.call("HGET", identityKey, scopeKey))
    if existing.appEntityId ~= appEntityId then
      conflicts = conflicts + 1
    end
  end
  redis.call("ZADD", identityIndex, now, scopeKey)
end

local budget = 2 * math.floor((#ARGV - 3) / 4)
local function expire(hash, zindex)
  local stale = redis.call("ZRANGE", zindex, "-inf", "(" .. (now - retention), "BYSCORE", "LIMIT", 0, budget)
  if #stale > 0 then
    redis.call("HDEL", hash, unpack(stale))
    redis.call("ZREM", zindex, unpack(stale))
  end
end
expire(runtimeKey, runtimeIndex)
expire(identityKey, identityIndex)
-- The four keys are written together, so their expiries are renewed together, to one and a half retentions: only
-- once fewer than one retention is left on the agent's identity key, or when this runtime's keys have none yet (its
-- first bindings). A key so lives at least one retention after its last binding.
local renewed_ttl = math.floor(retention * 1.5)
if redis.call("PTTL", identityKey) < retention or redis.call("PTTL", runtimeKey) < 0 then
  for _, key in ipairs({ runtimeKey, runtimeIndex, identityKey, identityIndex }) do
    redis.call("PEXPIRE", key, renewed_ttl)
  end
end
return conflicts
