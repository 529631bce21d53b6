-- The Harness refused the input: the run can never get a result, so it leaves the pending index as `unknown`, with
-- the refusal's code as its reason, and the Lamp is told; atomic so a receipt binding meanwhile keeps the run.
-- KEYS[1] = B; ARGV[1] = {runId, errorCode, now}
-- Reply: {ended} (false when the run was no longer pending or its receipt had bound)
--!include os-keys.lua
--!include emit-run-update.lua
local base = KEYS[1]
local args = cjson.decode(ARGV[1])
local runKey = os_keys.run(base, args.runId)
if redis.call('HGET', runKey, 'state') ~= 'pending' or redis.call('HEXISTS', runKey, 'deliveryId') == 1 then
  return cjson.encode({ ended = false })
end
redis.call('HSET', runKey, 'state', 'unknown', 'sendError', args.errorCode, 'endReason', args.errorCode)
redis.call('ZREM', os_keys.pendingRuns(base), args.runId)
emit_run_update(base, args.runId, 'unknown', args.errorCode, '', args.now)
return cjson.encode({ ended = true })
