-- The worker handed a claimed playback's playback.start to the gateway (KEYS[1] = device base B): from now on it may
-- be on the Lamp, so a job that finds it `sending` later must never send it again, only wait for its ack until the
-- deadline. Atomic so an ack that already moved it on (a fast Lamp) is never overwritten.
-- Args: {playbackId, now, ackTimeoutMs}. Replies {verdict = 'awaiting-ack', ackDeadline} while it is `sending`, else
-- {verdict = 'settled', state} (the ack came first) or {verdict = 'unknown'}.
--!include os-keys.lua
local base = KEYS[1]
local args = cjson.decode(ARGV[1])
local key = os_keys.playback(base, args.playbackId)
local state = redis.call('HGET', key, 'state')
if not state then return cjson.encode({ verdict = 'unknown' }) end
if state ~= 'sending' then return cjson.encode({ verdict = 'settled', state = state }) end
local deadline = args.now + args.ackTimeoutMs
redis.call('HSET', key, 'sentAt', args.now, 'ackDeadline', deadline)
return cjson.encode({ verdict = 'awaiting-ack', ackDeadline = deadline })
