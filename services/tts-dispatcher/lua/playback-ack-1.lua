-- The Lamp's ack of one playback (KEYS[1] = device base B). started/finished/interrupted: sending|uncertain -> played;
-- rejected: sending|uncertain -> failed (lamp_rejected); on played only lastAck moves forward. Atomic because the
-- move, the outbox mirror, the run.updates and leaving the device's line (which names the next head) go together.
-- Args: {playbackId, now, ack}. Replies, by verdict: moved {kind, state, reason?, wake?, sentAt?} (wake: the new head
-- of the line, whose job may wait behind this one; sentAt: when it was handed to the gateway, if it was) | recorded
-- (a later ack of a played playback) | stale {state} (changes nothing) | unknown.
--!include playback-line.lua
local base = KEYS[1]
local args = cjson.decode(ARGV[1])
local ack, now = args.ack, args.now

-- A later ack never loses to an earlier one arriving late (finished, then a delayed started).
local ACK_RANK = { started = 1, finished = 2, interrupted = 2, rejected = 2 }
if not ACK_RANK[ack] then return redis.error_reply('INVALID_ACK ' .. tostring(ack)) end

local playback = load_playback(base, args.playbackId)
if not playback then return cjson.encode({ verdict = 'unknown' }) end
local newer = not (playback.lastAck and ACK_RANK[playback.lastAck] and ACK_RANK[playback.lastAck] >= ACK_RANK[ack])

if playback.state == 'sending' or playback.state == 'uncertain' then
  local to, reason = 'played', nil
  if ack == 'rejected' then to, reason = 'failed', 'lamp_rejected' end
  local reply = move_playback('moved', base, playback, to, reason, now, newer and ack or nil)
  if playback.state == 'sending' then reply.sentAt = playback.sentAt end
  return cjson.encode(reply)
end
if playback.state == 'played' and ack ~= 'rejected' and newer then
  write_playback(base, playback, { 'lastAck', ack, 'lastAckAt', now }, false)
  return cjson.encode({ verdict = 'recorded' })
end
return cjson.encode({ verdict = 'stale', state = playback.state })
