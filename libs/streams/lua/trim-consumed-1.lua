-- Trims one pipeline stream up to the oldest entry some consumer group may still need: an entry goes only once
-- every group has been delivered past it and it is pending for none. One atomic step on the stream's own key, so no
-- group reads or claims between the look at the groups and the trim.
-- KEYS[1] = stream; no args. Answers {outcome = 'trimmed', minId, removed}: the MINID trimmed to and how many entries
-- left, or {outcome = 'kept'} when nothing may go. A stream without groups is left alone (nobody has said what it
-- still needs).
local stream = KEYS[1]
local KEPT = cjson.encode({outcome = 'kept'})
if redis.call('EXISTS', stream) == 0 then return KEPT end

local function parse(id)
  local ms, seq = string.match(id, '^(%d+)-(%d+)$')
  return {tonumber(ms), tonumber(seq)}
end

local function older(a, b)
  return a[1] < b[1] or (a[1] == b[1] and a[2] < b[2])
end

local floor = nil
local groups = redis.call('XINFO', 'GROUPS', stream)
for _, fields in ipairs(groups) do
  local info = {}
  for i = 1, #fields, 2 do info[fields[i]] = fields[i + 1] end
  local delivered = parse(info['last-delivered-id'])
  local needed = {delivered[1], delivered[2] + 1}
  if tonumber(info['pending']) > 0 then
    local oldest = parse(redis.call('XPENDING', stream, info['name'])[2])
    if older(oldest, needed) then needed = oldest end
  end
  if floor == nil or older(needed, floor) then floor = needed end
end
if floor == nil then return KEPT end
local min_id = string.format('%.0f-%.0f', floor[1], floor[2])
return cjson.encode({outcome = 'trimmed', minId = min_id, removed = redis.call('XTRIM', stream, 'MINID', '~', min_id)})
