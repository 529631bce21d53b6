-- A resync re-sends every retained result with fresh eventIds: read the log head and hand out one new eventId
-- per retained result in one step, so live events appended meanwhile get ids after them.
-- KEYS[1] = device base; no args. Answers {head, resultIds}.
--!include harness-keys.lua
local base = KEYS[1]
local result_ids = redis.call('ZRANGE', harness_keys.results(base), 0, -1)
local sequence = harness_keys.eventSequence(base)
local head = tonumber(redis.call('GET', sequence) or '0')
if #result_ids > 0 then redis.call('INCRBY', sequence, #result_ids) end
return cjson.encode({head = head, resultIds = result_ids})
