-- Marks a run cancelled (nothing is spoken for it) and, while it is still pending, queues one turn.stop.
-- A repeated cancel changes nothing and queues nothing. The stop is queued before the mark, since a script
-- does not roll back: a failed XADD must leave the run uncancelled so the Lamp's retry can succeed.
-- A first cancel is a run.update (`cancelled`).
-- KEYS[1] = B; args {runId, stopKey, now, stopCommandJson}. Answers {outcome}: not_found | already_cancelled |
-- cancelled | stop_queued.
--!include os-keys.lua
--!include emit-run-update.lua
local base = KEYS[1]
local args = cjson.decode(ARGV[1])
local runKey = os_keys.run(base, args.runId)
local run = redis.call('HMGET', runKey, 'state', 'cancelledAt')
if not run[1] then
  return cjson.encode({outcome = 'not_found'})
end
if run[2] then
  return cjson.encode({outcome = 'already_cancelled'})
end
if run[1] ~= 'pending' then
  redis.call('HSET', runKey, 'cancelledAt', args.now)
  emit_run_update(base, args.runId, 'cancelled', '', '', args.now)
  return cjson.encode({outcome = 'cancelled'})
end
redis.call('XADD', os_keys.commands(base), '*', 'payload', args.stopCommandJson)
redis.call('HSET', runKey, 'cancelledAt', args.now, 'stopKey', args.stopKey)
emit_run_update(base, args.runId, 'cancelled', '', '', args.now)
return cjson.encode({outcome = 'stop_queued'})
