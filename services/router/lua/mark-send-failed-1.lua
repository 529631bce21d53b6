-- The Harness refused the input: the run can never get a result, so it leaves the pending index as `unknown`, with
-- the refusal's code as its reason, and the Lamp is told.
-- KEYS[1] = B; ARGV: runId, errorCode, now
--!include emit-run-update.lua
local runKey = KEYS[1] .. ':run:' .. ARGV[1]
if redis.call('HGET', runKey, 'state') ~= 'pending' or redis.call('HEXISTS', runKey, 'deliveryId') == 1 then
  return 0
end
redis.call('HSET', runKey, 'state', 'unknown', 'sendError', ARGV[2], 'endReason', ARGV[2])
redis.call('ZREM', KEYS[1] .. ':runs:pending', ARGV[1])
emit_run_update(KEYS[1], ARGV[1], 'unknown', ARGV[2], '', ARGV[3])
return 1
