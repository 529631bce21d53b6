-- Creates the one outbox entry of a result, and the playbacks it implies, atomically (KEYS[1] = device base B), each
-- queued playback joining the end of the device's line in the same step, so the line holds a device's answers in the
-- order they were dispatched. An existing entry wins: a redelivered os.resolved changes nothing and learns what to
-- (re-)enqueue.
-- Args: {resultKey, now, deviceId, resultId, state (queued|suppressed), speechText, reason?, voiceTargetId?,
--        voiceTargetExpiresAt?, newestRunId?, playbackId?, notice? {playbackId, text}}
-- A result created `suppressed` is a run.update `suppressed` (with the reason) for each of its member runs.
-- Replies {created, state, playbackId?, notice? {playbackId, state}}.
--!include os-keys.lua
--!include result-run-updates.lua
local base = KEYS[1]
local args = cjson.decode(ARGV[1])
local now = args.now
local outboxKey = os_keys.outbox(base, args.resultKey)

local function noticeOf(noticeId)
  if not noticeId then return nil end
  local state = redis.call('HGET', os_keys.playback(base, noticeId), 'state')
  if not state then return nil end
  return { playbackId = noticeId, state = state }
end

local existing = redis.call('HMGET', outboxKey, 'state', 'playbackId', 'noticePlaybackId')
if existing[1] then
  return cjson.encode({
    created = false, state = existing[1], playbackId = existing[2] or nil, notice = noticeOf(existing[3] or nil),
  })
end

local function createPlayback(id, kind, text)
  local fields = { 'deviceId', args.deviceId, 'playbackId', id, 'resultKey', args.resultKey, 'resultId', args.resultId,
    'kind', kind, 'state', 'queued', 'queuedAt', now, 'createdAt', now, 'voiceTargetId', args.voiceTargetId or '',
    'text', text }
  -- Optional fields are absent rather than empty.
  for field, value in pairs({ voiceTargetExpiresAt = args.voiceTargetExpiresAt, newestRunId = args.newestRunId }) do
    fields[#fields + 1] = field
    fields[#fields + 1] = value
  end
  redis.call('HSET', os_keys.playback(base, id), unpack(fields))
  redis.call('RPUSH', os_keys.playbackLine(base), id)
end

local fields = { 'deviceId', args.deviceId, 'resultKey', args.resultKey, 'resultId', args.resultId, 'state', args.state,
  args.state .. 'At', now, 'createdAt', now, 'speechText', args.speechText }
local noticeId = args.notice and args.notice.playbackId or nil
for field, value in pairs({ reason = args.reason, playbackId = args.playbackId, noticePlaybackId = noticeId,
                            voiceTargetId = args.voiceTargetId }) do
  fields[#fields + 1] = field
  fields[#fields + 1] = value
end
redis.call('HSET', outboxKey, unpack(fields))
if args.playbackId then createPlayback(args.playbackId, 'answer', args.speechText) end
if noticeId then createPlayback(noticeId, 'notice', args.notice.text) end
if args.state == 'suppressed' then emit_for_result_members(base, args.resultKey, 'suppressed', args.reason, '', now) end
return cjson.encode({ created = true, state = args.state, playbackId = args.playbackId, notice = noticeOf(noticeId) })
