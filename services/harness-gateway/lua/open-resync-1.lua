-- A resync re-sends every retained result with fresh eventIds: read the log head and hand out one new eventId
-- per retained result in one step, so live events appended meanwhile get ids after them.
-- KEYS[1] = device base. Returns {head, resultIds}.
local base = KEYS[1]
local result_ids = redis.call('ZRANGE', base .. ':results', 0, -1)
local head = tonumber(redis.call('GET', base .. ':event-seq') or '0')
if #result_ids > 0 then redis.call('INCRBY', base .. ':event-seq', #result_ids) end
return {head, result_ids}
