-- The runs a claimed result's members name, read in one step: for each (deliveryId, idempotencyKey) pair, the run
-- the delivery index names, else the run the key index names, with the index that found it and the run's fields.
-- KEYS[1] = B; ARGV: deliveryId, idempotencyKey of each member in turn.
-- Returns per member {via ('delivery' | 'key' | '' when neither names a run), the run's fields flat as HGETALL}.
local base = KEYS[1]
local found = {}
for index = 1, #ARGV, 2 do
  local via, runId = 'delivery', redis.call('GET', base .. ':delivery:' .. ARGV[index])
  if not runId then
    via, runId = 'key', redis.call('GET', base .. ':key:' .. ARGV[index + 1])
  end
  if runId then
    found[#found + 1] = { via, redis.call('HGETALL', base .. ':run:' .. runId) }
  else
    found[#found + 1] = { '', {} }
  end
end
return found
