-- Ends a run the OS gave up on (its deadline passed) as `unknown` with the OS's reason, only while it is still
-- pending: a result or a receipt that ended it in the meantime wins. State, both indexes and the run.update change
-- in one step, so the Lamp hears of exactly the end the store records, once.
-- KEYS[1] = B; ARGV: runId, reason, now
--!include emit-run-update.lua
local base, runId = KEYS[1], ARGV[1]
local runKey = base .. ':run:' .. runId
if redis.call('HGET', runKey, 'state') ~= 'pending' then
  return 0
end
redis.call('HSET', runKey, 'state', 'unknown', 'endReason', ARGV[2])
redis.call('ZREM', base .. ':runs:pending', runId)
redis.call('ZREM', base .. ':runs:deadlines', runId)
emit_run_update(base, runId, 'unknown', ARGV[2], '', ARGV[3])
return 1
