-- One atomic step per routed result on the device's slot: dedupe by result identity with the content hash,
-- verify every listed run still matches and is pending, store the one result with its membership, and resolve
-- exactly the listed runs (each gets a run.update). Unlisted runs are not touched.
-- KEYS[1] = B
-- ARGV: resultKey, resultId, serverInstanceId, deviceId, agentId, outcome, fullText, engineTurnId ('' = none),
--       membersJson, contentHash, now, memberCount, then per member: runId, deliveryId, idempotencyKey
--!include emit-run-update.lua
local base = KEYS[1]
local resultKey, resultId, instance, agentId = ARGV[1], ARGV[2], ARGV[3], ARGV[5]
local resultHash = base .. ':result:' .. resultKey

local stored = redis.call('HMGET', resultHash, 'contentHash', 'emittedAt')
if stored[1] then
  if stored[1] ~= ARGV[10] then
    return { 'content_changed', stored[1] }
  end
  if stored[2] then
    return { 'already_emitted', '' }
  end
  return { 'stored_not_emitted', '' }
end

local count = tonumber(ARGV[12])
for i = 0, count - 1 do
  local runId, deliveryId, key = ARGV[13 + i * 3], ARGV[14 + i * 3], ARGV[15 + i * 3]
  local run = redis.call('HMGET', base .. ':run:' .. runId,
    'state', 'deliveryId', 'idempotencyKey', 'agentId', 'serverInstanceId')
  if not run[1] then return { 'member_invalid', 'UNKNOWN_MEMBER', runId } end
  if run[3] ~= key then return { 'member_invalid', 'KEY_MISMATCH', runId } end
  if run[2] ~= deliveryId then return { 'member_invalid', 'DELIVERY_MISMATCH', runId } end
  if run[4] ~= agentId then return { 'member_invalid', 'AGENT_MISMATCH', runId } end
  if run[5] ~= instance then return { 'member_invalid', 'INSTANCE_MISMATCH', runId } end
  if run[1] ~= 'pending' then return { 'member_invalid', 'MEMBER_NOT_PENDING', runId } end
end

local now = ARGV[11]
redis.call('HSET', resultHash, 'resultId', resultId, 'serverInstanceId', instance, 'deviceId', ARGV[4],
  'agentId', agentId, 'outcome', ARGV[6], 'fullText', ARGV[7], 'members', ARGV[9],
  'contentHash', ARGV[10], 'storedAt', now)
if ARGV[8] ~= '' then
  redis.call('HSET', resultHash, 'engineTurnId', ARGV[8])
end
redis.call('SET', base .. ':result-id:' .. resultId, resultKey)
for i = 0, count - 1 do
  local runId = ARGV[13 + i * 3]
  -- The run names its result by resultId: with its serverInstanceId (checked equal above) that is the resultKey.
  redis.call('HSET', base .. ':run:' .. runId, 'state', 'resolved', 'outcome', ARGV[6],
    'resultId', resultId, 'resolvedAt', now)
  redis.call('ZREM', base .. ':runs:pending', runId)
  emit_run_update(base, runId, 'resolved', '', '', now)
end
return { 'stored', '' }
