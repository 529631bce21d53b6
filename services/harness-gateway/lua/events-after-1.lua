-- The device's logged events after a cursor, read in one step: up to ARGV[2] of them past eventId ARGV[1], each with
-- its body and, for a result event, the stored result's fields (a result trimmed meanwhile answers none; a body
-- trimmed between the index and the bodies is simply gone, like any trimmed event).
-- KEYS[1] = device base. Returns {{eventId, body, resultFields}, ...}, resultFields flat as HGETALL answers.
local base = KEYS[1]
local ids = redis.call('ZRANGEBYSCORE', base .. ':events', '(' .. ARGV[1], '+inf', 'LIMIT', 0, tonumber(ARGV[2]))
local events = {}
if #ids == 0 then return events end
local bodies = redis.call('HMGET', base .. ':event-body', unpack(ids))
for index, id in ipairs(ids) do
  local body = bodies[index]
  if body then
    local fields = {}
    local ok, decoded = pcall(cjson.decode, body)
    if ok and type(decoded) == 'table' and decoded.kind == 'result' and type(decoded.resultId) == 'string' then
      fields = redis.call('HGETALL', base .. ':result:' .. decoded.resultId)
    end
    events[#events + 1] = {id, body, fields}
  end
end
return events
