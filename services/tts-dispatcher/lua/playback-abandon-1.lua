-- A playback job gave up for good (attempts spent, stalled too often) (KEYS[1] = device base B): its playback must not
-- stay `sending` or `queued`, and must leave the device's line so the next one goes. sending -> uncertain
-- (send_interrupted: it may have reached the Lamp, so it is never sent again); queued -> failed (worker_lost).
-- Atomic like every move: the state, the outbox mirror, the run.updates and the line go together.
-- Args: {playbackId, now}. Replies {verdict = 'ended', kind, state, reason, wake?} | {verdict = 'settled', state} |
-- {verdict = 'unknown'}.
--!include playback-line.lua
local base = KEYS[1]
local args = cjson.decode(ARGV[1])
local playback = load_playback(base, args.playbackId)
if not playback then return cjson.encode({ verdict = 'unknown' }) end
if playback.state == 'sending' then
  return cjson.encode(move_playback('ended', base, playback, 'uncertain', 'send_interrupted', args.now))
end
if playback.state == 'queued' then
  return cjson.encode(move_playback('ended', base, playback, 'failed', 'worker_lost', args.now))
end
return cjson.encode({ verdict = 'settled', state = playback.state })
