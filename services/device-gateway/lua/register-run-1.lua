-- Registers one voice run and queues its send for the router, atomically on the device's slot.
-- A repeated requestId returns the run it already made (same key, no second send), limits or not.
-- A new run is refused, changing nothing, while the device has maxPendingRuns unresolved runs or its voice.request
-- token bucket (shared by all its sockets on every gateway replica, refilled on the Redis clock) is empty.
-- KEYS[1] = B (os device base). Args {run = {runId, requestId, idempotencyKey, requestHash, deviceId, agentId,
-- machineId, text, voiceTargetId, voiceTargetExpiresAt, replyRoute}, now, sendCommandJson, limits = {rateBurst,
-- ratePerSecond, maxPendingRuns}}. Answers {status, ...}: created | existing {runId, idempotencyKey} | conflict |
-- key_taken {idempotencyKey} | too_many_pending | rate_limited {retryAfterMs}.
--!include os-keys.lua
local base = KEYS[1]
local args = cjson.decode(ARGV[1])
local run, limits = args.run, args.limits
local burst, perSecond = limits.rateBurst, limits.ratePerSecond

local existing = redis.call('GET', os_keys.request(base, run.requestId))
if existing then
  local stored = redis.call('HMGET', os_keys.run(base, existing), 'idempotencyKey', 'requestHash')
  if stored[2] ~= run.requestHash then
    return cjson.encode({status = 'conflict'})
  end
  return cjson.encode({status = 'existing', runId = existing, idempotencyKey = stored[1]})
end
if redis.call('EXISTS', os_keys.idempotencyKey(base, run.idempotencyKey)) == 1 then
  return cjson.encode({status = 'key_taken', idempotencyKey = run.idempotencyKey})
end
if redis.call('ZCARD', os_keys.pendingRuns(base)) >= limits.maxPendingRuns then
  return cjson.encode({status = 'too_many_pending'})
end

-- The bucket is written only when a token is taken: a refusal leaves it as it was, and its refill is computed
-- from the last take. It expires once it would be full again anyway.
local bucketKey = os_keys.voiceRequestRate(base)
local clock = redis.call('TIME')
local nowMs = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local bucket = redis.call('HMGET', bucketKey, 'tokens', 'at')
local tokens = burst
if bucket[1] then
  tokens = math.min(burst, tonumber(bucket[1]) + math.max(0, nowMs - tonumber(bucket[2])) * perSecond / 1000)
end
if tokens < 1 then
  return cjson.encode({status = 'rate_limited', retryAfterMs = math.ceil((1 - tokens) * 1000 / perSecond)})
end

local now = args.now
-- The command goes first: scripts do not roll back, and a failed XADD must leave no half-registered run.
redis.call('XADD', os_keys.commands(base), '*', 'payload', args.sendCommandJson)
redis.call('HSET', bucketKey, 'tokens', tostring(tokens - 1), 'at', nowMs)
redis.call('PEXPIRE', bucketKey, math.ceil(burst * 1000 / perSecond))
redis.call('HSET', os_keys.run(base, run.runId),
  'runId', run.runId, 'deviceId', run.deviceId, 'agentId', run.agentId, 'machineId', run.machineId,
  'idempotencyKey', run.idempotencyKey, 'requestId', run.requestId, 'requestHash', run.requestHash, 'text', run.text,
  'voiceTargetId', run.voiceTargetId, 'voiceTargetExpiresAt', run.voiceTargetExpiresAt, 'replyRoute', run.replyRoute,
  'state', 'pending', 'createdAt', now)
redis.call('SET', os_keys.request(base, run.requestId), run.runId)
redis.call('SET', os_keys.idempotencyKey(base, run.idempotencyKey), run.runId)
redis.call('ZADD', os_keys.runs(base), now, run.runId)
redis.call('ZADD', os_keys.pendingRuns(base), now, run.runId)
return cjson.encode({status = 'created', runId = run.runId, idempotencyKey = run.idempotencyKey})
