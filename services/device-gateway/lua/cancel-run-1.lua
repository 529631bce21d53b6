-- Marks a run cancelled (nothing is spoken for it) and, while it is still pending, queues one turn.stop.
-- A repeated cancel changes nothing and queues nothing. The stop is queued before the mark, since a script
-- does not roll back: a failed XADD must leave the run uncancelled so the Lamp's retry can succeed.
-- A first cancel is a run.update (`cancelled`).
-- KEYS[1] = B; ARGV: runId, stopKey, now, stopCommandJson
--!include emit-run-update.lua
local base = KEYS[1]
local runKey = base .. ':run:' .. ARGV[1]
local run = redis.call('HMGET', runKey, 'state', 'cancelledAt')
if not run[1] then
  return 'not_found'
end
if run[2] then
  return 'already_cancelled'
end
if run[1] ~= 'pending' then
  redis.call('HSET', runKey, 'cancelledAt', ARGV[3])
  emit_run_update(base, ARGV[1], 'cancelled', '', '', ARGV[3])
  return 'cancelled'
end
redis.call('XADD', base .. ':commands', '*', 'payload', ARGV[4])
redis.call('HSET', runKey, 'cancelledAt', ARGV[3], 'stopKey', ARGV[2])
emit_run_update(base, ARGV[1], 'cancelled', '', '', ARGV[3])
return 'stop_queued'
