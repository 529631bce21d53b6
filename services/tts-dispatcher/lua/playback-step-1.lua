-- The playback state machine (KEYS[1] = device base B). One step of one playback, mirrored onto the result's
-- outbox entry when the playback is the answer. Every transition stamps <state>At. Atomic because the claim must
-- read the Lamp's presence, the target's expiry and the newest run's cancel together with the state it moves, and
-- keep the device's index of playbacks waiting for the Lamp (`B:playbacks:awaiting-lamp`) true to that state.
-- ARGV: op, playbackId, now, orderWaitMs, then the op's own arguments:
--   claim <recheckMs> <deadGateway?> <repeatWaitMs>
--                    queued -> sending (returns the gateway holding the Lamp), or suppressed (target expired / newest
--                    run cancelled since dispatch); with no Lamp it stays queued, indexed as awaiting the Lamp, and
--                    returns when to check again: min(target expiry, now + recheckMs), for a repeat min(createdAt +
--                    repeatWaitMs, now + recheckMs), a repeat past that bound -> failed lamp_offline. A playback found
--                    in sending was interrupted mid-send -> uncertain, and is never sent again. A presence naming
--                    deadGateway (the worker saw no heartbeat of that instance) counts as no presence. An answer or
--                    notice is sent in the device's speech order (B:speech-order, added by the router): while an
--                    earlier-routed result has a playback still queued with a job working on it or sending (not
--                    yet started on the Lamp), or has no outbox entry yet and was routed less than orderWaitMs ago,
--                    it stays queued (`behind`, returning that result and when to look again, never past its own
--                    voice target's expiry); earlier entries no longer owed are dropped. One not in the order yet
--                    (the router adds it just after routing) comes after every entry there.
--   ack-timeout      sending -> uncertain (ack_timeout)
--   abandon          the job gave up: sending -> uncertain, queued -> failed (worker_lost)
--   ack <state> <channel> <deviceId>
--                    started/finished/interrupted: sending|uncertain -> played; rejected -> failed (lamp_rejected);
--                    leaving sending is published on <channel> ({deviceId, playbackId, state}) to wake the worker
--                    waiting for this ack (a hint: the worker also re-reads the state on its own)
-- Moving to uncertain or failed is a run.update `playback`, to suppressed one `suppressed`, for each member run.
-- Leaving queued or sending for anything but sending (started on the Lamp, or ended unsent) takes the playback's
-- result out of the speech order and names the playback of the result now first in it (`wake`: its job may be
-- waiting behind this one).
-- Returns {verdict, state, reason, kind, gatewayId, waitUntil, related}; verdict: moved | settled | offline | behind |
-- stale | recorded | invalid | unknown; waitUntil (epoch ms) only with offline and behind; related: with behind the
-- resultKey waited for, with moved the playback to wake ('' when none). A claim that moved to sending appends what
-- the send needs: resultKey, resultId, voiceTargetId, text. A queued playback without a voice target cannot be sent
-- (`invalid`, unchanged; never made by this service).
--!include result-run-updates.lua
local base = KEYS[1]
local op, id, now = ARGV[1], ARGV[2], ARGV[3]
local arg, deadGateway, repeatWaitMs = ARGV[5], ARGV[6], ARGV[7]
local key = base .. ':playback:' .. id
local awaitingKey = base .. ':playbacks:awaiting-lamp'
-- Every field a step decides on, in one read; what a send carries (resultId, text) is read only when it sends.
local state, kind, resultKey, storedReason, lastAck, createdAt, targetExpiresAt, newestRunId, targetId =
  unpack(redis.call('HMGET', key, 'state', 'kind', 'resultKey', 'reason', 'lastAck', 'createdAt',
    'voiceTargetExpiresAt', 'newestRunId', 'voiceTargetId'))
if not state then return {'unknown', '', '', '', '', '', ''} end
local outboxKey = false
if kind == 'answer' then outboxKey = base .. ':outbox:' .. resultKey end
local orderKey = base .. ':speech-order'
local ordered = kind ~= 'repeat'

local MAX_ORDER_LOOKS = 16
local nowMs = tonumber(now)
local orderWaitMs = tonumber(ARGV[4])
-- A queued playback no job has looked at for this long has no job: its result was dead-lettered between the outbox
-- entry and the job (a job waiting behind another looks again every orderWaitMs; one waiting for the Lamp is indexed).
local orphanAfterMs = 2 * orderWaitMs
local PENDING = {queued = true, sending = true}

-- Until when a playback holds the speech order (epoch ms; the holder re-checks by then at the latest), or false: sent
-- and not yet acked, or queued with a job working on it (created or looked at within orphanAfterMs, or waiting for
-- the Lamp).
local function holdsUntil(playbackId)
  if not playbackId then return false end
  local playback = redis.call('HMGET', base .. ':playback:' .. playbackId, 'state', 'createdAt', 'lookedAt')
  if playback[1] == 'sending' then return nowMs + orderWaitMs end
  if playback[1] ~= 'queued' then return false end
  local orphanAt = math.max(tonumber(playback[2] or '') or 0, tonumber(playback[3] or '') or 0) + orphanAfterMs
  if orphanAt > nowMs then return math.min(orphanAt, nowMs + orderWaitMs) end
  if redis.call('ZSCORE', awaitingKey, playbackId) then return nowMs + orderWaitMs end
  return false
end

-- What a result still owes the Lamp: 'unseen' (no outbox entry yet), 'pending' with the playback that holds the
-- order and until when, or false (every playback has started on the Lamp, ended, or has no job; or it has none).
local function owed(other)
  local outbox = redis.call('HMGET', base .. ':outbox:' .. other, 'state', 'playbackId', 'noticePlaybackId')
  if not outbox[1] then return 'unseen' end
  for i = 2, 3 do
    local heldUntil = holdsUntil(outbox[i])
    if heldUntil then return 'pending', outbox[i], heldUntil end
  end
  return false
end

-- After this result leaves the speech order: the playback of the first result still owed in it, if any (entries no
-- longer owed are dropped on the way).
local function nextInOrder()
  for _ = 1, MAX_ORDER_LOOKS do
    local head = redis.call('ZRANGE', orderKey, 0, 0)[1]
    if not head then return '' end
    local owes, holder = owed(head)
    if owes == 'pending' then return holder end
    if owes == 'unseen' then return '' end
    redis.call('ZREM', orderKey, head)
  end
  return ''
end

local RUN_UPDATE_CHANGE = {uncertain = 'playback', failed = 'playback', suppressed = 'suppressed'}

-- A state without a reason has no `reason` field (a late ack turning uncertain into played clears it; the playback's
-- own field was read above, so only one that is there is deleted).
-- `ack` (or nil): the ack recorded with the move, in the same write.
local function move(to, reason, gateway, ack)
  local fields = {'state', to, to .. 'At', now}
  if reason ~= '' then
    fields[#fields + 1] = 'reason'
    fields[#fields + 1] = reason
  end
  if ack then
    fields[#fields + 1] = 'lastAck'
    fields[#fields + 1] = ack
    fields[#fields + 1] = 'lastAckAt'
    fields[#fields + 1] = now
  end
  for _, target in ipairs(outboxKey and {key, outboxKey} or {key}) do
    redis.call('HSET', target, unpack(fields))
    if reason == '' and (storedReason or target == outboxKey) then redis.call('HDEL', target, 'reason') end
  end
  -- Only a queued playback can be waiting for the Lamp.
  if state == 'queued' then redis.call('ZREM', awaitingKey, id) end
  local change = RUN_UPDATE_CHANGE[to]
  if change then emit_for_result_members(base, resultKey, change, reason, id, now) end
  local wake = ''
  if ordered and to ~= 'sending' and PENDING[state] and redis.call('ZREM', orderKey, resultKey) == 1 then
    wake = nextInOrder()
  end
  return {'moved', to, reason, kind, gateway or '', '', wake}
end

local function stay(verdict, waitUntil, related)
  return {verdict, state, storedReason or '', kind, '', waitUntil or '', related or ''}
end

-- The earlier-routed result this one must wait for, and until when it waits before looking again; nil when it may
-- be sent now. Looks at a bounded number of entries ahead of it, dropping those no longer owed: started, ended or
-- without a job, or unseen by the outbox for orderWaitMs since routed (a result the run-resolver refused never
-- arrives). One with a playback queued or sending is about to be heard (its job runs, wakes with the Lamp, or waits
-- for the ack): it is waited for, never past this playback's own voice target expiry. Waiting is looking: the
-- playback records when, so one waiting behind it is not taken for an orphan.
local function waitsFor()
  if not ordered then return nil end
  for _ = 1, MAX_ORDER_LOOKS do
    local head = redis.call('ZRANGE', orderKey, 0, 0, 'WITHSCORES')
    if head[1] == nil or head[1] == resultKey then return nil end
    local owes, _, heldUntil = owed(head[1])
    if owes == 'pending' then
      redis.call('HSET', key, 'lookedAt', now)
      return head[1], heldUntil
    end
    local waitEnds = tonumber(head[2]) + orderWaitMs
    if owes == 'unseen' and waitEnds > nowMs then
      redis.call('HSET', key, 'lookedAt', now)
      return head[1], waitEnds
    end
    redis.call('ZREM', orderKey, head[1])
  end
  return nil
end

-- A later ack never loses to an earlier one arriving late (finished, then a delayed started).
local ACK_RANK = {started = 1, finished = 2, interrupted = 2, rejected = 2}
local function newerAck(ack)
  return not (lastAck and ACK_RANK[lastAck] and ACK_RANK[lastAck] >= ACK_RANK[ack])
end
local function recordAck(ack)
  if not newerAck(ack) then return false end
  redis.call('HSET', key, 'lastAck', ack, 'lastAckAt', now)
  if outboxKey then redis.call('HSET', outboxKey, 'lastAck', ack, 'lastAckAt', now) end
  return true
end

if op == 'claim' then
  if state == 'sending' then return move('uncertain', 'send_interrupted') end
  if state ~= 'queued' then return stay('settled') end
  if not targetId or targetId == '' then return stay('invalid') end
  local waitLimit
  if kind == 'repeat' then
    waitLimit = (tonumber(createdAt or '') or 0) + tonumber(repeatWaitMs)
  else
    waitLimit = tonumber(targetExpiresAt or '') or 0
    if waitLimit <= tonumber(now) then return move('suppressed', 'expired') end
    if newestRunId and newestRunId ~= '' then
      local cancelledAt = redis.call('HGET', base .. ':run:' .. newestRunId, 'cancelledAt')
      if cancelledAt and cancelledAt ~= '' then return move('suppressed', 'cancelled') end
    end
  end
  local gateway = redis.call('GET', base .. ':lamp-presence')
  if not gateway or gateway == deadGateway then
    if waitLimit <= tonumber(now) then return move('failed', 'lamp_offline') end
    local waitUntil = math.min(waitLimit, tonumber(now) + tonumber(arg))
    redis.call('ZADD', awaitingKey, waitUntil, id)
    return stay('offline', string.format('%.0f', waitUntil))
  end
  local before, waitEnds = waitsFor()
  if before then return stay('behind', string.format('%.0f', math.min(waitEnds, waitLimit)), before) end
  redis.call('HSET', key, 'gatewayId', gateway)
  local sending = move('sending', '', gateway)
  local resultId, text = unpack(redis.call('HMGET', key, 'resultId', 'text'))
  sending[8], sending[9], sending[10], sending[11] = resultKey, resultId, targetId, text
  return sending
end

if op == 'ack-timeout' then
  if state == 'sending' then return move('uncertain', 'ack_timeout') end
  return stay('settled')
end

if op == 'abandon' then
  if state == 'sending' then return move('uncertain', 'send_interrupted') end
  if state == 'queued' then return move('failed', 'worker_lost') end
  return stay('settled')
end

if op == 'ack' then
  if not ACK_RANK[arg] then return redis.error_reply('INVALID_ACK ' .. tostring(arg)) end
  if state == 'sending' or state == 'uncertain' then
    local ack = newerAck(arg) and arg or nil
    local moved
    if arg == 'rejected' then moved = move('failed', 'lamp_rejected', nil, ack) else moved = move('played', '', nil, ack) end
    if state == 'sending' then
      local channel, deviceId = ARGV[6], ARGV[7]
      redis.call('PUBLISH', channel, cjson.encode({deviceId = deviceId, playbackId = id, state = moved[2]}))
    end
    return moved
  end
  if state == 'played' and arg ~= 'rejected' and recordAck(arg) then return stay('recorded') end
  return stay('stale')
end

return redis.error_reply('UNKNOWN_OP ' .. tostring(op))
