-- Registers one voice run and queues its send for the router, atomically on the device's slot.
-- A repeated requestId returns the run it already made (same key, no second send), limits or not.
-- A new run is refused, changing nothing, while the device has maxPending unresolved runs or its voice.request
-- token bucket (shared by all its sockets on every gateway replica, refilled on the Redis clock) is empty.
-- KEYS[1] = B (os device base)
-- ARGV: requestId, runId, idempotencyKey, requestHash, deviceId, agentId, machineId, text,
--       voiceTargetId, voiceTargetExpiresAt, replyRoute, now, sendCommandJson,
--       rateBurst, ratePerSecond, maxPending
local base = KEYS[1]
local requestId, runId, key, requestHash = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local burst, perSecond, maxPending = tonumber(ARGV[14]), tonumber(ARGV[15]), tonumber(ARGV[16])

local existing = redis.call('GET', base .. ':request:' .. requestId)
if existing then
  local stored = redis.call('HMGET', base .. ':run:' .. existing, 'idempotencyKey', 'requestHash')
  if stored[2] ~= requestHash then
    return { 'conflict', existing, stored[1] }
  end
  return { 'existing', existing, stored[1] }
end
if redis.call('EXISTS', base .. ':key:' .. key) == 1 then
  return { 'key_taken', '', key }
end
if redis.call('ZCARD', base .. ':runs:pending') >= maxPending then
  return { 'too_many_pending', '', '' }
end

-- The bucket is written only when a token is taken: a refusal leaves it as it was, and its refill is computed
-- from the last take. It expires once it would be full again anyway.
local bucketKey = base .. ':voice-rate'
local clock = redis.call('TIME')
local nowMs = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local bucket = redis.call('HMGET', bucketKey, 'tokens', 'at')
local tokens = burst
if bucket[1] then
  tokens = math.min(burst, tonumber(bucket[1]) + math.max(0, nowMs - tonumber(bucket[2])) * perSecond / 1000)
end
if tokens < 1 then
  return { 'rate_limited', '', math.ceil((1 - tokens) * 1000 / perSecond) }
end

local now = ARGV[12]
-- The command goes first: scripts do not roll back, and a failed XADD must leave no half-registered run.
redis.call('XADD', base .. ':commands', '*', 'payload', ARGV[13])
redis.call('HSET', bucketKey, 'tokens', tostring(tokens - 1), 'at', nowMs)
redis.call('PEXPIRE', bucketKey, math.ceil(burst * 1000 / perSecond))
redis.call('HSET', base .. ':run:' .. runId,
  'runId', runId, 'deviceId', ARGV[5], 'agentId', ARGV[6], 'machineId', ARGV[7],
  'idempotencyKey', key, 'requestId', requestId, 'requestHash', requestHash, 'text', ARGV[8],
  'voiceTargetId', ARGV[9], 'voiceTargetExpiresAt', ARGV[10], 'replyRoute', ARGV[11],
  'state', 'pending', 'createdAt', now)
redis.call('SET', base .. ':request:' .. requestId, runId)
redis.call('SET', base .. ':key:' .. key, runId)
redis.call('ZADD', base .. ':runs', now, runId)
redis.call('ZADD', base .. ':runs:pending', now, runId)
return { 'created', runId, key }
