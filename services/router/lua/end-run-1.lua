-- Ends a run the OS gave up on (its deadline passed) as `unknown` with the OS's reason, only while it is still
-- pending: a result or a receipt that ended it in the meantime wins. State, both indexes and the run.update change
-- in one atomic step, so the Lamp hears of exactly the end the store records, once.
-- KEYS[1] = B; ARGV[1] = {runId, reason, now}
-- Reply: {ended}
--!include os-keys.lua
--!include emit-run-update.lua
local base = KEYS[1]
local args = cjson.decode(ARGV[1])
local runKey = os_keys.run(base, args.runId)
if redis.call('HGET', runKey, 'state') ~= 'pending' then
  return cjson.encode({ ended = false })
end
redis.call('HSET', runKey, 'state', 'unknown', 'endReason', args.reason)
redis.call('ZREM', os_keys.pendingRuns(base), args.runId)
redis.call('ZREM', os_keys.runDeadlines(base), args.runId)
emit_run_update(base, args.runId, 'unknown', args.reason, '', args.now)
return cjson.encode({ ended = true })
