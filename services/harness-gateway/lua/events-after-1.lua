-- The device's logged events after a cursor, read in one step: up to `limit` of them past eventId `cursor`, each
-- with its body and, for a result event, the stored result's fields (a result trimmed meanwhile answers none).
-- One step, so an event is never sent with a result that a concurrent trim or expiry half removed.
-- KEYS[1] = device base. Args {cursor, limit}. Answers {events = [{eventId, body, result?}, ...]}, result as the
-- stored result's hash (field = value).
--!include harness-keys.lua
local base = KEYS[1]
local args = cjson.decode(ARGV[1])
local entries = redis.call('XRANGE', harness_keys.eventLog(base), '(0-' .. args.cursor, '+', 'COUNT', args.limit)
local events = {}
for _, entry in ipairs(entries) do
  local body = entry[2][2]
  local event = {eventId = tonumber(string.sub(entry[1], 3)), body = body}
  local ok, decoded = pcall(cjson.decode, body)
  if ok and type(decoded) == 'table' and decoded.kind == 'result' and type(decoded.resultId) == 'string' then
    local fields = redis.call('HGETALL', harness_keys.result(base, decoded.resultId))
    if #fields > 0 then
      local result = {}
      for index = 1, #fields, 2 do result[fields[index]] = fields[index + 1] end
      event.result = result
    end
  end
  events[#events + 1] = event
end
return cjson.encode({events = events})
