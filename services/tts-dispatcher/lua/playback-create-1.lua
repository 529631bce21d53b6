-- Creates one explicit playback ("say that again") unless it exists (KEYS[1] = device base B). A queued one joins the
-- end of the device's line in the same step; one created suppressed gives back the device-gateway's reservation.
-- Every repeat record expires retentionMs after its request: nothing else (no outbox entry) would ever remove it.
-- Args: {playbackId, now, deviceId, resultKey, resultId, state (queued|suppressed), reason?, voiceTargetId, text,
--        retentionMs}. Replies {created, state}.
--!include os-keys.lua
local base = KEYS[1]
local args = cjson.decode(ARGV[1])
local key = os_keys.playback(base, args.playbackId)
local existing = redis.call('HGET', key, 'state')
if existing then return cjson.encode({ created = false, state = existing }) end
local state, now = args.state, args.now
redis.call('HSET', key,
  'deviceId', args.deviceId, 'playbackId', args.playbackId, 'resultKey', args.resultKey, 'resultId', args.resultId,
  'kind', 'repeat', 'state', state, state .. 'At', now, 'createdAt', now, 'voiceTargetId', args.voiceTargetId,
  'text', args.text)
if args.reason then redis.call('HSET', key, 'reason', args.reason) end
redis.call('PEXPIRE', key, args.retentionMs)
if state == 'queued' then
  redis.call('RPUSH', os_keys.playbackLine(base), args.playbackId)
else
  -- Never queued: it no longer counts against the device's queued repeats (accept-repeat-1.lua).
  redis.call('ZREM', os_keys.repeatsAccepted(base), args.playbackId)
end
return cjson.encode({ created = true, state = state })
