-- Claims a validated result's member runs for it before it is routed: each run must still be pending (or already
-- claimed by this very result: a replay), and the result identity must not already be claimed with other content.
-- Atomic because two results routed at once must never both claim one run, and a claim must never half-happen: the
-- claims are what lets the run-resolver resolve the listed runs without judging them again. Fenced by the device
-- lease, like every write of the router.
-- KEYS[1] = B; ARGV[1] = {leaseOwner, resultKey, contentHash, runIds = [runId] (at least one)}
-- Reply: {outcome = claimed | replayed} | {outcome = content_changed, claimedHash}
--   | {outcome = member_taken, runId, state, routedAs?}
--!include os-keys.lua
local base = KEYS[1]
local args = cjson.decode(ARGV[1])
if redis.call('GET', os_keys.lease(base)) ~= args.leaseOwner then
  return redis.error_reply('LEASE_LOST')
end
local routedKey = os_keys.resultClaim(base, args.resultKey)
-- A result stored before claims existed has its hash on the stored record only.
local claimedHash = redis.call('GET', routedKey) or redis.call('HGET', os_keys.result(base, args.resultKey), 'contentHash')
if claimedHash and claimedHash ~= args.contentHash then
  return cjson.encode({ outcome = 'content_changed', claimedHash = claimedHash })
end
for _, runId in ipairs(args.runIds) do
  local run = redis.call('HMGET', os_keys.run(base, runId), 'state', 'routedAs', 'serverInstanceId', 'resultId')
  local routedAs = run[2] or (run[4] and run[3] .. '|' .. run[4])
  local own = routedAs == args.resultKey
  if not run[1] or (not own and (routedAs or run[1] ~= 'pending')) then
    local taken = { outcome = 'member_taken', runId = runId, state = run[1] or 'gone' }
    if routedAs then taken.routedAs = routedAs end
    return cjson.encode(taken)
  end
end
redis.call('SET', routedKey, args.contentHash)
for _, runId in ipairs(args.runIds) do
  redis.call('HSET', os_keys.run(base, runId), 'routedAs', args.resultKey)
end
if claimedHash then
  return cjson.encode({ outcome = 'replayed' })
end
return cjson.encode({ outcome = 'claimed' })
