-- The pending runs of one device whose deadline (voice target expiry + grace) has passed. The pending index is
-- scored by creation time, so the router keeps its own index `B:runs:deadlines` scored by `voiceTargetExpiresAt`:
-- runs registered since the last sweep are indexed in the same step that reads what is due (atomic, so none is
-- missed between the two), and a run that ended some other way leaves the index when it comes due. Only what is due
-- is read. Also answers when the next run comes due and how many results are held, so an idle device's next sweep
-- can wait.
-- KEYS[1] = B; ARGV[1] = {dueBefore (now - grace, epoch ms), limit}
-- Reply: {due = [runId] ({} when none), nextExpiresAt? (earliest voiceTargetExpiresAt not yet due), held}
--!include os-keys.lua
local base = KEYS[1]
local args = cjson.decode(ARGV[1])
local deadlines = os_keys.runDeadlines(base)
for _, runId in ipairs(redis.call('ZDIFF', 2, os_keys.pendingRuns(base), deadlines)) do
  local expiresAt = redis.call('HGET', os_keys.run(base, runId), 'voiceTargetExpiresAt')
  redis.call('ZADD', deadlines, tonumber(expiresAt) or 0, runId)
end
local dueBefore = string.format('%.0f', args.dueBefore)
local due = {}
for _, runId in ipairs(redis.call('ZRANGEBYSCORE', deadlines, '-inf', dueBefore, 'LIMIT', 0, args.limit)) do
  if redis.call('HGET', os_keys.run(base, runId), 'state') == 'pending' then
    due[#due + 1] = runId
  else
    redis.call('ZREM', deadlines, runId)
  end
end
local reply = { due = due, held = redis.call('HLEN', os_keys.waiting(base)) }
local upcoming = redis.call('ZRANGEBYSCORE', deadlines, '(' .. dueBefore, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
if upcoming[2] then reply.nextExpiresAt = tonumber(upcoming[2]) end
return cjson.encode(reply)
