-- Creates the one outbox entry of a result, and the playbacks it implies, atomically (KEYS[1] = device base B).
-- An existing entry wins: a redelivered os.resolved changes nothing and learns what to (re-)enqueue.
-- ARGV: resultKey, now, deviceId, resultId, state (queued|suppressed), reason, speechText, voiceTargetId,
--       playbackId, voiceTargetExpiresAt, newestRunId, noticePlaybackId, noticeText
-- A result created `suppressed` is a run.update `suppressed` (with the reason) for each of its member runs.
-- Returns {created 0|1, outbox state, playbackId, noticePlaybackId, notice state}.
--!include result-run-updates.lua
local base = KEYS[1]
local resultKey, now, deviceId, resultId = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local state, reason, speechText, voiceTargetId = ARGV[5], ARGV[6], ARGV[7], ARGV[8]
local playbackId, expiresAt, newestRunId = ARGV[9], ARGV[10], ARGV[11]
local noticeId, noticeText = ARGV[12], ARGV[13]
local outboxKey = base .. ':outbox:' .. resultKey

local function playbackState(id)
  if id == '' then return '' end
  return redis.call('HGET', base .. ':playback:' .. id, 'state') or ''
end

local existing = redis.call('HMGET', outboxKey, 'state', 'playbackId', 'noticePlaybackId')
if existing[1] then
  local existingNotice = existing[3] or ''
  return {0, existing[1], existing[2] or '', existingNotice, playbackState(existingNotice)}
end

local function createPlayback(id, kind, text)
  redis.call('HSET', base .. ':playback:' .. id,
    'deviceId', deviceId, 'playbackId', id, 'resultKey', resultKey, 'resultId', resultId, 'kind', kind,
    'state', 'queued', 'queuedAt', now, 'createdAt', now, 'voiceTargetId', voiceTargetId,
    'voiceTargetExpiresAt', expiresAt, 'newestRunId', newestRunId, 'text', text)
end

local fields = {'deviceId', deviceId, 'resultKey', resultKey, 'resultId', resultId, 'state', state,
  state .. 'At', now, 'createdAt', now, 'speechText', speechText}
-- Optional fields are absent rather than empty, so readers see "no reason", not "".
for field, value in pairs({reason = reason, playbackId = playbackId, noticePlaybackId = noticeId,
                           voiceTargetId = voiceTargetId}) do
  if value ~= '' then
    fields[#fields + 1] = field
    fields[#fields + 1] = value
  end
end
redis.call('HSET', outboxKey, unpack(fields))
if playbackId ~= '' then createPlayback(playbackId, 'answer', speechText) end
if noticeId ~= '' then createPlayback(noticeId, 'notice', noticeText) end
if state == 'suppressed' then emit_for_result_members(base, resultKey, 'suppressed', reason, '', now) end
return {1, state, playbackId, noticeId, playbackState(noticeId)}
