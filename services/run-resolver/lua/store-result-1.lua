-- Stores one routed result and resolves its member runs, in one atomic step on the device's slot: dedupe by
-- result identity with the canonical content hash, store the one result with its membership, resolve exactly the
-- listed runs (each gets a run.update). Atomic so a result is never stored without its runs resolved, nor a run
-- resolved twice. The router validated the members and claimed the identity and each run for this result
-- (claim-result-1.lua): a result whose identity the router did not claim with this content hash is not stored at
-- all (`unclaimed`: an entry no router wrote), and a listed run is resolved only while it is pending and claimed for
-- this result; the others are counted (a run that reached its deadline after the claim keeps the end it got).
-- Unlisted runs are not touched.
-- KEYS[1] = B
-- ARGV[1] = {resultKey, resultId, serverInstanceId, deviceId, agentId, outcome, fullText, engineTurnId?, membersJson,
--   contentHash, now, runIds = [runId] (at least one)}
-- Reply: {outcome = stored, skipped (listed runs not resolved)} | {outcome = stored_not_emitted | already_emitted
--   | unclaimed} | {outcome = content_changed, storedHash}
--!include os-keys.lua
--!include emit-run-update.lua
local base = KEYS[1]
local args = cjson.decode(ARGV[1])
local resultHash = os_keys.result(base, args.resultKey)

local stored = redis.call('HMGET', resultHash, 'contentHash', 'emittedAt')
if stored[1] then
  if stored[1] ~= args.contentHash then
    return cjson.encode({ outcome = 'content_changed', storedHash = stored[1] })
  end
  if stored[2] then
    return cjson.encode({ outcome = 'already_emitted' })
  end
  return cjson.encode({ outcome = 'stored_not_emitted' })
end

if redis.call('GET', os_keys.resultClaim(base, args.resultKey)) ~= args.contentHash then
  return cjson.encode({ outcome = 'unclaimed' })
end

local now = args.now
redis.call('HSET', resultHash, 'resultId', args.resultId, 'serverInstanceId', args.serverInstanceId,
  'deviceId', args.deviceId, 'agentId', args.agentId, 'outcome', args.outcome, 'fullText', args.fullText,
  'members', args.membersJson, 'contentHash', args.contentHash, 'storedAt', now)
if args.engineTurnId then
  redis.call('HSET', resultHash, 'engineTurnId', args.engineTurnId)
end
redis.call('SET', os_keys.resultId(base, args.resultId), args.resultKey)
local skipped = 0
for _, runId in ipairs(args.runIds) do
  local runKey = os_keys.run(base, runId)
  local run = redis.call('HMGET', runKey, 'state', 'routedAs')
  if run[1] == 'pending' and run[2] == args.resultKey then
    -- The run names its result by resultId: with its serverInstanceId (the claim's) that is the resultKey.
    redis.call('HSET', runKey, 'state', 'resolved', 'outcome', args.outcome, 'resultId', args.resultId,
      'resolvedAt', now)
    redis.call('ZREM', os_keys.pendingRuns(base), runId)
    emit_run_update(base, runId, 'resolved', '', '', now)
  else
    skipped = skipped + 1
  end
end
return cjson.encode({ outcome = 'stored', skipped = skipped })
