-- The pending runs of one device whose deadline (voice target expiry + grace) has passed. The pending index is
-- scored by creation time, so the router keeps its own index `B:runs:deadlines` scored by `voiceTargetExpiresAt`:
-- runs registered since the last sweep are indexed in the same step that reads what is due (none is missed between
-- the two), and a run that ended some other way leaves the index when it comes due. Only what is due is read.
-- Also answers when the next run comes due and how many results are held, so an idle device's next sweep can wait.
-- KEYS[1] = B; ARGV: dueBefore (now - grace, epoch ms), limit
-- Returns {due runIds, the earliest voiceTargetExpiresAt not yet due (-1: none), held results (HLEN B:waiting)}
local base = KEYS[1]
local deadlines = base .. ':runs:deadlines'
for _, runId in ipairs(redis.call('ZDIFF', 2, base .. ':runs:pending', deadlines)) do
  local expiresAt = redis.call('HGET', base .. ':run:' .. runId, 'voiceTargetExpiresAt')
  redis.call('ZADD', deadlines, tonumber(expiresAt) or 0, runId)
end
local due = {}
for _, runId in ipairs(redis.call('ZRANGEBYSCORE', deadlines, '-inf', ARGV[1], 'LIMIT', 0, ARGV[2])) do
  if redis.call('HGET', base .. ':run:' .. runId, 'state') == 'pending' then
    due[#due + 1] = runId
  else
    redis.call('ZREM', deadlines, runId)
  end
end
local upcoming = redis.call('ZRANGEBYSCORE', deadlines, '(' .. ARGV[1], '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
local nextExpiry = -1
if upcoming[2] then nextExpiry = tonumber(upcoming[2]) end
return {due, nextExpiry, redis.call('HLEN', base .. ':waiting')}
