-- Removes what one device's OS store retains past retention, in one atomic step on its slot (KEYS[1] = B), and
-- says when the device comes due again: atomic so a run never goes while a result or lookup that names it stays.
-- Driven by the run-resolver's retention index, never by a keyspace SCAN.
-- ARGV[1] = {now, retentionMs, recheckMs (when an old run is still pending), limit (runs looked at per call)}
-- A run goes when it is no longer pending, was created before the cut and its result (if any) was stored before
-- it; with it go its lookups (request, key, delivery), its entry in the router's deadline index (a run resolved
-- before its deadline stays there until the router's sweep of that device, which an idle device no longer gets), the result it was claimed for (`routedAs`, else the one that
-- resolved it) with the claim, the result's id lookup, outbox entry and the outbox's playbacks. A pending run is
-- never removed. The device's rejection, protocol-error and held-expired logs lose their entries older than the cut
-- (stream ids are epoch ms); a log left empty forgets its identities, so a rejection replayed after retention is
-- recorded again. The run.update log (ids `0-<updateId>`, each update stamped `at`) loses its updates older than the
-- cut, oldest first; the stream itself stays, even empty, so a Lamp that resumes later still sees update ids
-- increase.
-- Reply: {removedRuns, removedResults, removedLogEntries, nextDue? (absent: nothing retained is left)}
--!include os-keys.lua
--!include expire-log-by-age.lua
local base = KEYS[1]
local args = cjson.decode(ARGV[1])
local now, retention, recheck, limit = args.now, args.retentionMs, args.recheckMs, args.limit
local cut = now - retention
local runs = os_keys.runs(base)
local next_due = 0

local function due_at(at)
  if next_due == 0 or at < next_due then next_due = at end
end

local function remove_playback(playback_id)
  if playback_id then redis.call('DEL', os_keys.playback(base, playback_id)) end
end

local removed_results = 0
local function remove_result(result_key)
  local result = os_keys.result(base, result_key)
  local result_id = redis.call('HGET', result, 'resultId')
  local outbox = os_keys.outbox(base, result_key)
  local played = redis.call('HMGET', outbox, 'playbackId', 'noticePlaybackId')
  remove_playback(played[1])
  remove_playback(played[2])
  redis.call('DEL', outbox, os_keys.resultClaim(base, result_key))
  if result_id then
    redis.call('DEL', result, os_keys.resultId(base, result_id))
    removed_results = removed_results + 1
  end
end

local removed_runs = 0
local looked = 0
local oldest = redis.call('ZRANGE', runs, 0, limit - 1, 'WITHSCORES')
for i = 1, #oldest, 2 do
  local run_id, created = oldest[i], tonumber(oldest[i + 1])
  looked = looked + 1
  if created >= cut then
    due_at(created + retention)
    break
  end
  local run_key = os_keys.run(base, run_id)
  local run = redis.call('HMGET', run_key, 'state', 'resultId', 'requestId', 'idempotencyKey', 'deliveryId',
    'serverInstanceId', 'routedAs')
  -- A resolved run names its result by resultId; the result's key is `<serverInstanceId>|<resultId>` (os-keys.ts).
  if run[2] then run[2] = run[6] .. '|' .. run[2] end
  run[2] = run[7] or run[2]
  local stored_at = nil
  if run[2] then stored_at = tonumber(redis.call('HGET', os_keys.result(base, run[2]), 'storedAt')) end
  if run[1] == 'pending' then
    due_at(now + recheck)
  elseif stored_at and stored_at >= cut then
    due_at(stored_at + retention)
  else
    if run[2] then remove_result(run[2]) end
    if run[3] then redis.call('DEL', os_keys.request(base, run[3])) end
    if run[4] then redis.call('DEL', os_keys.idempotencyKey(base, run[4])) end
    if run[5] then redis.call('DEL', os_keys.delivery(base, run[5])) end
    redis.call('DEL', run_key)
    redis.call('ZREM', runs, run_id)
    redis.call('ZREM', os_keys.pendingRuns(base), run_id)
    redis.call('ZREM', os_keys.runDeadlines(base), run_id)
    removed_runs = removed_runs + 1
  end
end
-- Removed runs from a full page without reaching a young one: there may be more to do right away.
if looked == limit and removed_runs > 0 then due_at(now) end

local removed_entries = 0
local rejections = os_keys.rejections(base)
local protocol_errors = os_keys.protocolErrors(base)
local held_expired = os_keys.heldExpired(base)
for _, key in ipairs({rejections, protocol_errors, held_expired}) do
  if redis.call('EXISTS', key) == 1 then
    removed_entries = removed_entries + redis.call('XTRIM', key, 'MINID', cut)
    local first = redis.call('XRANGE', key, '-', '+', 'COUNT', 1)[1]
    if first then
      due_at(tonumber(string.match(first[1], '^(%d+)')) + retention)
    else
      redis.call('DEL', key, key .. '-ids')
    end
  end
end
-- Updates are appended with the time of the step that made them: the expired ones lead the log.
local expired_updates, update_kept_at = expire_log_by_age(os_keys.runUpdates(base), cut, limit)
removed_entries = removed_entries + expired_updates
if update_kept_at then
  due_at(update_kept_at + retention)
elseif expired_updates == limit then
  -- A whole page went: there may be more right away.
  due_at(now)
end
local reply = { removedRuns = removed_runs, removedResults = removed_results, removedLogEntries = removed_entries }
if next_due > 0 then reply.nextDue = next_due end
return cjson.encode(reply)
