-- A playback job's turn (KEYS[1] = device base B): decides, in one step, what the job does with its playback now.
-- Atomic because it reads the Lamp's presence, the voice target's expiry, the newest run's cancel and the device's
-- line together with the state it moves, and keeps the awaiting-lamp index true to that state.
-- Args: {playbackId, now, offlineRecheckMs, repeatWaitMs, deadGateway?} (deadGateway: the gateway instance the
-- presence key named while it had no heartbeat; a presence naming it counts as no presence).
-- Replies, by verdict:
--   sending       queued -> sending: the head of the line, Lamp present; carries the gateway and the playback.start.
--   awaiting-ack  sent, its ack deadline not reached: the job waits until ackDeadline.
--   ended         sending never handed to the gateway (sentAt absent: the worker died between claim and send) ->
--                 uncertain send_interrupted, never sent again; sent and past its ack deadline -> uncertain
--                 ack_timeout; queued past its voice target -> suppressed expired, newest run cancelled -> suppressed
--                 cancelled; a repeat whose Lamp stayed away past repeatWaitMs -> failed lamp_offline.
--   behind        not the head of the line: the job waits until woken when the head leaves, at the latest until
--                 waitUntil: when the head would have ended by itself, or one offline recheck for a queued head
--                 (an answer also no later than its own expiry);
--                 names the head {playbackId, kind, state} (a queued head may have lost its job: see the worker).
--   offline       the head, no Lamp: indexed as awaiting the Lamp, re-checked at waitUntil or on lamp.connected.
--   settled | invalid (queued without a voice target; never made by this service) | unknown: nothing to do.
-- A head found overdue (queued past its wait limit, or sent past its ack deadline) or gone is ended or dropped here,
-- as its own job would, so a head nobody works on never holds the line past its own deadline. `endedHeads` lists
-- what those ends were, to be counted.
--!include os-keys.lua
--!include playback-line.lua
local base = KEYS[1]
local args = cjson.decode(ARGV[1])
local id, now = args.playbackId, args.now
local line = os_keys.playbackLine(base)

local playback = load_playback(base, id)
if not playback then return cjson.encode({ verdict = 'unknown' }) end

if playback.state == 'sending' then
  local reason
  if not playback.sentAt then
    reason = 'send_interrupted'
  elseif playback.ackDeadline <= now then
    reason = 'ack_timeout'
  end
  if reason then return cjson.encode(move_playback('ended', base, playback, 'uncertain', reason, now)) end
  return cjson.encode({ verdict = 'awaiting-ack', ackDeadline = playback.ackDeadline })
end
if playback.state ~= 'queued' then return cjson.encode({ verdict = 'settled', state = playback.state }) end
if not playback.targetId or playback.targetId == '' then return cjson.encode({ verdict = 'invalid' }) end

local limit = wait_limit(playback, args.repeatWaitMs)
if playback.kind ~= 'repeat' then
  if limit <= now then return cjson.encode(move_playback('ended', base, playback, 'suppressed', 'expired', now)) end
  if playback.newestRunId and playback.newestRunId ~= '' then
    local cancelledAt = redis.call('HGET', os_keys.run(base, playback.newestRunId), 'cancelledAt')
    if cancelledAt and cancelledAt ~= '' then
      return cjson.encode(move_playback('ended', base, playback, 'suppressed', 'cancelled', now))
    end
  end
end

-- The head this playback waits behind (as load_playback reads it) and until when it waits at the latest, or nil when
-- it is the head (or not in the line at all: written before the line existed, it goes once the line is empty). Heads
-- overdue or gone are ended or dropped on the way: each look either answers or takes one head out, so the line's
-- length bounds the looks.
local endedHeads = {}
local function head_to_wait_for()
  for _ = 1, redis.call('LLEN', line) do
    local headId = redis.call('LINDEX', line, 0)
    if headId == id then return nil end
    local head = load_playback(base, headId)
    if not head or not IN_LINE[head.state] then
      redis.call('LREM', line, 1, headId)
    elseif head.state == 'queued' and wait_limit(head, args.repeatWaitMs) <= now then
      local reason = head.kind == 'repeat' and 'lamp_offline' or 'expired'
      local ending = move_playback('ended', base, head, head.kind == 'repeat' and 'failed' or 'suppressed', reason, now)
      endedHeads[#endedHeads + 1] = { kind = ending.kind, state = ending.state, reason = ending.reason }
    elseif head.state == 'sending' and head.ackDeadline and head.ackDeadline <= now then
      local ending = move_playback('ended', base, head, 'uncertain', 'ack_timeout', now)
      endedHeads[#endedHeads + 1] = { kind = ending.kind, state = ending.state, reason = ending.reason }
    elseif head.state == 'queued' then
      -- Woken when the head leaves; a wake that was lost (a restart between the head's step and the wake) costs at
      -- most one recheck.
      return head, math.min(wait_limit(head, args.repeatWaitMs), now + args.offlineRecheckMs)
    elseif head.ackDeadline then
      return head, head.ackDeadline
    else
      -- Being sent right now: its job is running it (or re-runs it once its lock expires).
      return head, now + args.offlineRecheckMs
    end
  end
  return nil
end

local function with_ended_heads(reply)
  if #endedHeads > 0 then reply.endedHeads = endedHeads end
  return cjson.encode(reply)
end

local head, headDue = head_to_wait_for()
if head then
  local waitUntil = headDue
  if playback.kind ~= 'repeat' then waitUntil = math.min(headDue, limit) end
  return with_ended_heads({
    verdict = 'behind', head = { playbackId = head.id, kind = head.kind, state = head.state }, waitUntil = waitUntil,
  })
end

local gateway = redis.call('GET', os_keys.lampPresence(base))
if not gateway or gateway == args.deadGateway then
  if limit <= now then
    return with_ended_heads(move_playback('ended', base, playback, 'failed', 'lamp_offline', now))
  end
  local waitUntil = math.min(limit, now + args.offlineRecheckMs)
  redis.call('ZADD', os_keys.awaitingLamp(base), waitUntil, id)
  return with_ended_heads({ verdict = 'offline', waitUntil = waitUntil })
end

local key = os_keys.playback(base, id)
redis.call('HSET', key, 'gatewayId', gateway)
move_playback('sending', base, playback, 'sending', nil, now)
local resultId, text = unpack(redis.call('HMGET', key, 'resultId', 'text'))
return with_ended_heads({
  verdict = 'sending',
  kind = playback.kind,
  gatewayId = gateway,
  send = { resultKey = playback.resultKey, resultId = resultId, voiceTargetId = playback.targetId, text = text },
})
