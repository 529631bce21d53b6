-- The device's playback line and the moves every playback step shares (included by the playback-*.lua steps).
-- A device's playbacks (answers, failure notices, repeats) wait in `B:playbacks:line` (a list) in the order they were
-- created; only its head is sent, and a playback leaves the line when it started on the Lamp or ended, which names
-- the new head so its job can be woken. So a device has at most one playback in flight, and its answers start in the
-- order they were dispatched without any wait being guessed.
--!include os-keys.lua
--!include result-run-updates.lua

local IN_LINE = { queued = true, sending = true }
local RUN_UPDATE_CHANGE = { uncertain = 'playback', failed = 'playback', suppressed = 'suppressed' }

-- One playback with every field a step decides on, read in one HMGET; nil when there is no such playback.
local function load_playback(base, id)
  local v = redis.call('HMGET', os_keys.playback(base, id), 'state', 'kind', 'resultKey', 'reason', 'lastAck',
    'createdAt', 'voiceTargetExpiresAt', 'newestRunId', 'voiceTargetId', 'sentAt', 'ackDeadline')
  if not v[1] then return nil end
  return {
    id = id, state = v[1], kind = v[2], resultKey = v[3], reason = v[4] or nil, lastAck = v[5] or nil,
    createdAt = tonumber(v[6] or '') or 0, targetExpiresAt = tonumber(v[7] or '') or 0, newestRunId = v[8] or nil,
    targetId = v[9] or nil, sentAt = tonumber(v[10] or ''), ackDeadline = tonumber(v[11] or ''),
  }
end

-- Until when a queued playback may wait to be sent (epoch ms): an answer or notice until its voice target expires, a
-- repeat (no voice-target expiry: the user asked just now) until repeatWaitMs after its request.
local function wait_limit(playback, repeatWaitMs)
  if playback.kind == 'repeat' then return playback.createdAt + repeatWaitMs end
  return playback.targetExpiresAt
end

-- Takes the playback out of the line; when it was the head, answers the new head (its job may be waiting behind it).
local function leave_line(base, id)
  local line = os_keys.playbackLine(base)
  local wasHead = redis.call('LINDEX', line, 0) == id
  redis.call('LREM', line, 1, id)
  if not wasHead then return nil end
  return redis.call('LINDEX', line, 0) or nil
end

-- Writes `fields` to the playback and, for an answer, to its outbox entry (which mirrors it); `dropReason` also deletes
-- a `reason` left on either.
local function write_playback(base, playback, fields, dropReason)
  local key = os_keys.playback(base, playback.id)
  local outbox = false
  if playback.kind == 'answer' then outbox = os_keys.outbox(base, playback.resultKey) end
  for _, target in ipairs(outbox and { key, outbox } or { key }) do
    redis.call('HSET', target, unpack(fields))
    if dropReason and (playback.reason or target == outbox) then redis.call('HDEL', target, 'reason') end
  end
end

-- Moves the playback (and its outbox entry, for an answer) to `to`, stamping <to>At; `reason` and `ack` may be nil.
-- A state without a reason has no `reason` field (a late ack turning uncertain into played clears it). Leaving
-- queued or sending for anything but sending leaves the line (and, for a repeat, its reservation); moving to uncertain
-- or failed is a run.update `playback`, to suppressed one `suppressed`, for each member run. Answers the reply
-- {verdict, kind, state, reason, wake}: wake is the new head of the line when this one was it.
local function move_playback(verdict, base, playback, to, reason, now, ack)
  local fields = { 'state', to, to .. 'At', now }
  if reason then
    fields[#fields + 1] = 'reason'
    fields[#fields + 1] = reason
  end
  if ack then
    fields[#fields + 1] = 'lastAck'
    fields[#fields + 1] = ack
    fields[#fields + 1] = 'lastAckAt'
    fields[#fields + 1] = now
  end
  write_playback(base, playback, fields, not reason)
  -- Only a queued playback can be waiting for the Lamp.
  if playback.state == 'queued' then redis.call('ZREM', os_keys.awaitingLamp(base), playback.id) end
  local wake
  if IN_LINE[playback.state] and to ~= 'sending' then
    wake = leave_line(base, playback.id)
    -- A repeat that started or ended no longer counts against the device's queued repeats (accept-repeat-1.lua).
    if playback.kind == 'repeat' then redis.call('ZREM', os_keys.repeatsAccepted(base), playback.id) end
  end
  local change = RUN_UPDATE_CHANGE[to]
  if change then emit_for_result_members(base, playback.resultKey, change, reason or '', playback.id, now) end
  return { verdict = verdict, kind = playback.kind, state = to, reason = reason, wake = wake }
end
