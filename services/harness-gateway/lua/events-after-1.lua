-- The device's logged events after a cursor, read in one step: up to ARGV[2] of them past eventId ARGV[1], each with
-- its body and, for a result event, the stored result's fields (a result trimmed meanwhile answers none).
-- KEYS[1] = device base. Returns {{eventId, body, resultFields}, ...}, resultFields flat as HGETALL answers.
local base = KEYS[1]
local entries = redis.call('XRANGE', base .. ':event-log', '(0-' .. ARGV[1], '+', 'COUNT', tonumber(ARGV[2]))
local events = {}
for _, entry in ipairs(entries) do
  local body = entry[2][2]
  local fields = {}
  local ok, decoded = pcall(cjson.decode, body)
  if ok and type(decoded) == 'table' and decoded.kind == 'result' and type(decoded.resultId) == 'string' then
    fields = redis.call('HGETALL', base .. ':result:' .. decoded.resultId)
  end
  events[#events + 1] = {string.sub(entry[1], 3), body, fields}
end
return events
