-- Admits one "say that again" of a device within its limit of queued repeats (KEYS[1] = device base B). Atomic so a
-- burst of repeats cannot all pass the count before any is recorded: the count and the reservation are one step.
-- `B:playbacks:repeats` (zset playbackId -> acceptedAt) holds the device's repeats accepted and not yet started on the
-- Lamp nor ended; the tts-dispatcher takes each out when it leaves the device's line, or when it is never queued. A
-- repeated requestId keeps its playbackId (B:repeat-request:<requestId>, requestTtlSeconds) and is accepted again.
-- A reservation whose playback the tts-dispatcher has not created lostAfterMs after it was accepted was lost between
-- this step and the gateway's lamp_events append, and no longer counts.
-- Args: {requestId, playbackId (freshly minted), now, limit, requestTtlSeconds, lostAfterMs}.
-- Replies {verdict = 'accepted', playbackId} | {verdict = 'refused', queued}.
--!include os-keys.lua
local base = KEYS[1]
local args = cjson.decode(ARGV[1])
local requestKey = os_keys.repeatRequest(base, args.requestId)
local reservations = os_keys.repeatsAccepted(base)

local earlier = redis.call('GET', requestKey)
if earlier then return cjson.encode({ verdict = 'accepted', playbackId = earlier }) end

for _, id in ipairs(redis.call('ZRANGEBYSCORE', reservations, '-inf', args.now - args.lostAfterMs)) do
  if redis.call('EXISTS', os_keys.playback(base, id)) == 0 then redis.call('ZREM', reservations, id) end
end
local queued = redis.call('ZCARD', reservations)
if queued >= args.limit then return cjson.encode({ verdict = 'refused', queued = queued }) end
redis.call('SET', requestKey, args.playbackId, 'EX', args.requestTtlSeconds)
redis.call('ZADD', reservations, args.now, args.playbackId)
return cjson.encode({ verdict = 'accepted', playbackId = args.playbackId })
