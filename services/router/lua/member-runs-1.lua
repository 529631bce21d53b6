-- The runs a claimed result's members name, read in one step so the whole result is judged on one moment of the
-- store: for each (deliveryId, idempotencyKey) pair, the run the delivery index names, else the run the key index
-- names, with the index that found it and the run's fields.
-- KEYS[1] = B; ARGV[1] = {members = [{deliveryId, idempotencyKey}]} (at least one)
-- Reply: {members = [{via? (delivery | key; absent when neither names a run), run? (the run hash, absent when gone)}]}
--!include os-keys.lua
local base = KEYS[1]
local args = cjson.decode(ARGV[1])
local found = {}
for index, member in ipairs(args.members) do
  local via, runId = 'delivery', redis.call('GET', os_keys.delivery(base, member.deliveryId))
  if not runId then
    via, runId = 'key', redis.call('GET', os_keys.idempotencyKey(base, member.idempotencyKey))
  end
  local named = {}
  if runId then
    named.via = via
    local fields = redis.call('HGETALL', os_keys.run(base, runId))
    if #fields > 0 then
      named.run = {}
      for i = 1, #fields, 2 do named.run[fields[i]] = fields[i + 1] end
    end
  end
  -- An empty table would encode as an object, not a list element: `{found = false}` keeps the slot.
  named.found = runId and true or false
  found[index] = named
end
return cjson.encode({ members = found })
