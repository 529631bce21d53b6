-- Registers one voice run and queues its send for the router, atomically on the device's slot.
-- A repeated requestId returns the run it already made (same key, no second send).
-- KEYS[1] = B (os device base)
-- ARGV: requestId, runId, idempotencyKey, requestHash, deviceId, agentId, machineId, text,
--       voiceTargetId, voiceTargetExpiresAt, replyRoute, now, sendCommandJson
local base = KEYS[1]
local requestId, runId, key, requestHash = ARGV[1], ARGV[2], ARGV[3], ARGV[4]

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

local now = ARGV[12]
-- The command goes first: scripts do not roll back, and a failed XADD must leave no half-registered run.
redis.call('XADD', base .. ':commands', '*', 'payload', ARGV[13])
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
