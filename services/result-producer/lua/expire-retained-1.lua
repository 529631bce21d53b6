-- Removes what one device's Harness store retains past retention, in one atomic step on its slot (KEYS[1] = B),
-- and says when the device comes due again. Driven by the result-producer's retention index, never a SCAN, so a
-- quiet device's old records go too. apply-evidence trims only by capacity and reserve only when the device acts.
-- Args {now, eventRetentionMs, resultRetentionMs, receiptRetentionMs, limit}.
-- Goes: log events older than their retention (the log's floor moves with them), results older than result
-- retention, terminal receipts older than receipt retention (an unresolved reservation never goes).
-- Answers {removed, nextDue?}: no nextDue = nothing retained is left to expire (an unresolved reservation lists the
-- device again when it ends).
--!include expire-log-by-age.lua
--!include harness-keys.lua
local base = KEYS[1]
local args = cjson.decode(ARGV[1])
local now, event_ms, result_ms, receipt_ms, limit =
  args.now, args.eventRetentionMs, args.resultRetentionMs, args.receiptRetentionMs, args.limit
local removed = 0
local next_due = nil
local function due_at(at)
  if not next_due or at < next_due then next_due = at end
end

-- The log is in eventId order and events are appended with the time they happened: the expired ones lead it.
local expired_events, event_kept_at = expire_log_by_age(harness_keys.eventLog(base), now - event_ms, limit)
removed = removed + expired_events
if event_kept_at then due_at(event_kept_at + event_ms) end

-- A zset scored by time: members older than the cut go through `drop`; the oldest left sets the due time.
local function expire_by_score(key, retention_ms, drop)
  local expired = redis.call('ZRANGEBYSCORE', key, '-inf', '(' .. (now - retention_ms), 'LIMIT', 0, limit)
  for _, member in ipairs(expired) do
    drop(member)
    redis.call('ZREM', key, member)
    removed = removed + 1
  end
  local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  if first[2] then due_at(tonumber(first[2]) + retention_ms) end
end

expire_by_score(harness_keys.results(base), result_ms, function(result_id)
  redis.call('DEL', harness_keys.result(base, result_id))
end)
expire_by_score(harness_keys.terminalReservations(base), receipt_ms, function(key)
  redis.call('DEL', harness_keys.reservation(base, key))
  redis.call('ZREM', harness_keys.reservations(base), key)
  redis.call('ZREM', harness_keys.undispatched(base), key)
end)
return cjson.encode({removed = removed, nextDue = next_due})
