-- Persists identity bindings before the evidence that depends on them is emitted: the agent's mapping store keyed by
-- a digest of the native scope (seed 004's durable correlation table), shared by every runtime of the agent, so a
-- resumed session's next runtime and a reprocessed record find the row already there. A binding that already exists
-- is kept; a native scope already bound to another app id is a conflict. One step, so the mapping store and its
-- retention index never disagree about a binding.
-- Retention: each binding's last sighting is its score in the index beside the hash (`:identity-at`); a binding not
-- seen for retentionMs is removed here, a bounded number per call (twice the bindings written, so removal keeps pace
-- with writing), and both keys expire when the agent goes quiet (between one and one and a half retentions after its
-- last binding).
-- KEYS[1] = agent base (<p>:ev:{a:<agentId>}); derived keys share its hash tag.
-- Args {retentionMs, now (epoch ms), bindings = [{scopeKey, json, appEntityId}, ...]}.
-- Answers {conflicts}: the number of conflicting bindings.
--!include agent-keys.lua
local identityKey = agent_keys.identity(KEYS[1])
local identityIndex = agent_keys.identitySightings(KEYS[1])
local args = cjson.decode(ARGV[1])
local retention, now = args.retentionMs, args.now
local conflicts = 0
local sightings = {}
for _, binding in ipairs(args.bindings) do
  local scopeKey, json, appEntityId = binding.scopeKey, binding.json, binding.appEntityId
  if redis.call("HSETNX", identityKey, scopeKey, json) == 0 then
    -- A stored row is a JSON array whose second element is the app id (identity-binding.ts, storedBindingRowSchema).
    local existing = cjson.decode(redis.call("HGET", identityKey, scopeKey))
    if existing[2] ~= appEntityId then
      conflicts = conflicts + 1
    end
  end
  sightings[#sightings + 1] = now
  sightings[#sightings + 1] = scopeKey
end
redis.call("ZADD", identityIndex, unpack(sightings))

local stale = redis.call("ZRANGE", identityIndex, "-inf", "(" .. (now - retention), "BYSCORE", "LIMIT", 0,
  #sightings)
if #stale > 0 then
  redis.call("HDEL", identityKey, unpack(stale))
  redis.call("ZREM", identityIndex, unpack(stale))
end
-- Both keys are written together, so their expiries are renewed together, to one and a half retentions, once fewer
-- than one retention is left on the mapping store (or it has none yet): a key lives at least one retention after its
-- last binding.
if redis.call("PTTL", identityKey) < retention then
  local renewed_ttl = math.floor(retention * 1.5)
  redis.call("PEXPIRE", identityKey, renewed_ttl)
  redis.call("PEXPIRE", identityIndex, renewed_ttl)
end
return cjson.encode({conflicts = conflicts})
