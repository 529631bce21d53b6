-- Creates one explicit playback ("say that again") unless it exists (KEYS[1] = device base B).
-- ARGV: playbackId, now, deviceId, resultKey, resultId, kind, state, reason, voiceTargetId, text
-- Returns {created 0|1, state}.
local base = KEYS[1]
local id, now = ARGV[1], ARGV[2]
local key = base .. ':playback:' .. id
local existing = redis.call('HGET', key, 'state')
if existing then return {0, existing} end
local state = ARGV[7]
redis.call('HSET', key,
  'deviceId', ARGV[3], 'playbackId', id, 'resultKey', ARGV[4], 'resultId', ARGV[5], 'kind', ARGV[6],
  'state', state, state .. 'At', now, 'createdAt', now, 'voiceTargetId', ARGV[9], 'text', ARGV[10])
if ARGV[8] ~= '' then redis.call('HSET', key, 'reason', ARGV[8]) end
return {1, state}
