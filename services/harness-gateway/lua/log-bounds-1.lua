-- Where a resume cursor may start: the log head (last eventId handed out) and its floor (the eventId just before the
-- oldest event still logged, or the head when the log holds none): a cursor below the floor missed events. Both read
-- in one step, so no append or trim falls between them.
-- KEYS[1] = device base; no args. Answers {head, floor}.
--!include harness-keys.lua
local base = KEYS[1]
local head = tonumber(redis.call('GET', harness_keys.eventSequence(base)) or '0')
local oldest = redis.call('XRANGE', harness_keys.eventLog(base), '-', '+', 'COUNT', 1)[1]
if not oldest then return cjson.encode({head = head, floor = head}) end
return cjson.encode({head = head, floor = tonumber(string.sub(oldest[1], 3)) - 1})
