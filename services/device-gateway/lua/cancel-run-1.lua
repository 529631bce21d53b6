-- Marks a run cancelled (nothing is spoken for it) and, while it is still pending, queues one turn.stop.
-- A repeated cancel changes nothing and queues nothing.
-- KEYS[1] = B; ARGV: runId, stopKey, now, stopCommandJson
local base = KEYS[1]
local runKey = base .. ':run:' .. ARGV[1]
if redis.call('EXISTS', runKey) == 0 then
  return 'not_found'
end
if redis.call('HSETNX', runKey, 'cancelledAt', ARGV[3]) == 0 then
  return 'already_cancelled'
end
if redis.call('HGET', runKey, 'state') ~= 'pending' then
  return 'cancelled'
end
redis.call('HSET', runKey, 'stopKey', ARGV[2])
redis.call('XADD', base .. ':commands', '*', 'payload', ARGV[4])
return 'stop_queued'
