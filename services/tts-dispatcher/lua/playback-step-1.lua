-- The playback state machine (KEYS[1] = device base B). One step of one playback, mirrored onto the result's
-- outbox entry when the playback is the answer. Every transition stamps <state>At. Atomic because the claim must
-- read the Lamp's presence, the target's expiry and the newest run's cancel together with the state it moves, and
-- keep the device's index of playbacks waiting for the Lamp (`B:playbacks:awaiting-lamp`) true to that state.
--   claim <recheckMs> <deadGateway?> <repeatWaitMs>
--                    queued -> sending (returns the gateway holding the Lamp), or suppressed (target expired / newest
--                    run cancelled since dispatch); with no Lamp it stays queued, indexed as awaiting the Lamp, and
--                    returns when to check again: min(target expiry, now + recheckMs), for a repeat min(createdAt +
--                    repeatWaitMs, now + recheckMs), a repeat past that bound -> failed lamp_offline. A playback found
--                    in sending was interrupted mid-send -> uncertain, and is never sent again. A presence naming
--                    deadGateway (the worker saw no heartbeat of that instance) counts as no presence.
--   ack-timeout      sending -> uncertain (ack_timeout)
--   abandon          the job gave up: sending -> uncertain, queued -> failed (worker_lost)
--   ack <state> <channel> <deviceId>
--                    started/finished/interrupted: sending|uncertain -> played; rejected -> failed (lamp_rejected);
--                    leaving sending is published on <channel> ({deviceId, playbackId, state}) to wake the worker
--                    waiting for this ack (a hint: the worker also re-reads the state on its own)
-- Moving to uncertain or failed is a run.update `playback`, to suppressed one `suppressed`, for each member run.
-- Returns {verdict, state, reason, kind, gatewayId, waitUntil}; verdict: moved | settled | offline | stale | recorded |
-- unknown; waitUntil (epoch ms) only with offline.
--!include result-run-updates.lua
local base = KEYS[1]
local op, id, now, arg, deadGateway, repeatWaitMs = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local key = base .. ':playback:' .. id
local awaitingKey = base .. ':playbacks:awaiting-lamp'
local state = redis.call('HGET', key, 'state')
if not state then return {'unknown', '', '', '', '', ''} end
local kind, resultKey = unpack(redis.call('HMGET', key, 'kind', 'resultKey'))
local outboxKey = false
if kind == 'answer' then outboxKey = base .. ':outbox:' .. resultKey end

local RUN_UPDATE_CHANGE = {uncertain = 'playback', failed = 'playback', suppressed = 'suppressed'}

-- A state without a reason has no `reason` field (a late ack turning uncertain into played clears it).
local function move(to, reason, gateway)
  for _, target in ipairs(outboxKey and {key, outboxKey} or {key}) do
    redis.call('HSET', target, 'state', to, to .. 'At', now)
    if reason == '' then redis.call('HDEL', target, 'reason') else redis.call('HSET', target, 'reason', reason) end
  end
  redis.call('ZREM', awaitingKey, id)
  local change = RUN_UPDATE_CHANGE[to]
  if change then emit_for_result_members(base, resultKey, change, reason, id, now) end
  return {'moved', to, reason, kind, gateway or '', ''}
end

local function stay(verdict, waitUntil)
  return {verdict, state, redis.call('HGET', key, 'reason') or '', kind, '', waitUntil or ''}
end

-- A later ack never loses to an earlier one arriving late (finished, then a delayed started).
local ACK_RANK = {started = 1, finished = 2, interrupted = 2, rejected = 2}
local function recordAck(ack)
  local last = redis.call('HGET', key, 'lastAck')
  if last and ACK_RANK[last] and ACK_RANK[last] >= ACK_RANK[ack] then return false end
  redis.call('HSET', key, 'lastAck', ack, 'lastAckAt', now)
  if outboxKey then redis.call('HSET', outboxKey, 'lastAck', ack, 'lastAckAt', now) end
  return true
end

if op == 'claim' then
  if state == 'sending' then return move('uncertain', 'send_interrupted') end
  if state ~= 'queued' then return stay('settled') end
  local waitLimit
  if kind == 'repeat' then
    waitLimit = (tonumber(redis.call('HGET', key, 'createdAt') or '') or 0) + tonumber(repeatWaitMs)
  else
    waitLimit = tonumber(redis.call('HGET', key, 'voiceTargetExpiresAt') or '') or 0
    if waitLimit <= tonumber(now) then return move('suppressed', 'expired') end
    local newestRunId = redis.call('HGET', key, 'newestRunId')
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
  redis.call('HSET', key, 'gatewayId', gateway)
  return move('sending', '', gateway)
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
    recordAck(arg)
    local moved
    if arg == 'rejected' then moved = move('failed', 'lamp_rejected') else moved = move('played', '') end
    if state == 'sending' then
      local channel, deviceId = ARGV[5], ARGV[6]
      redis.call('PUBLISH', channel, cjson.encode({deviceId = deviceId, playbackId = id, state = moved[2]}))
    end
    return moved
  end
  if state == 'played' and arg ~= 'rejected' and recordAck(arg) then return stay('recorded') end
  return stay('stale')
end

return redis.error_reply('UNKNOWN_OP ' .. tostring(op))
