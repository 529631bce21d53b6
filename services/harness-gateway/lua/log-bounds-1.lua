-- Where a resume cursor may start: the log head (last eventId handed out) and its floor (the eventId just before the
-- oldest event still logged, or the head when the log holds none): a cursor below the floor missed events.
-- KEYS[1] = device base. Returns {head, floor}.
local base = KEYS[1]
local head = tonumber(redis.call('GET', base .. ':event-seq') or '0')
local oldest = redis.call('XRANGE', base .. ':event-log', '-', '+', 'COUNT', 1)[1]
if not oldest then return {head, head} end
return {head, tonumber(string.sub(oldest[1], 3)) - 1}
