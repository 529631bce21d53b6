-- Appends one run.update to the device's ordered log `<base>:run-updates` (ids `0-<updateId>`, about the newest 500
-- kept: RUN_UPDATES_KEPT in libs/contract/run-update.ts) and tells the device-gateways on the channel of the same
-- name; the message carries the update ({deviceId, updateId, update}: runUpdateNoticeSchema), so a socket right
-- behind it sends it without reading the log. The update is read from the run hash as the calling script left it, so
-- it says what the store says. Call it last in a script: it writes, and a script does not roll back.
-- change: receipt | cancelled | resolved | suppressed | playback | unknown; reason, playbackId: '' or nil = none.
local function emit_run_update(base, runId, change, reason, playbackId, now)
  local run = redis.call('HMGET', base .. ':run:' .. runId,
    'deviceId', 'requestId', 'state', 'outcome', 'resultId', 'receiptState', 'receipt', 'endReason')
  if not run[1] then return end
  local update = { runId = runId, requestId = run[2], state = run[3], change = change, at = tonumber(now) }
  if run[4] then update.outcome = run[4] end
  if run[5] then update.resultId = run[5] end
  if run[6] then update.receiptState = run[6] end
  if reason and reason ~= '' then
    update.reason = reason
  elseif change == 'unknown' and run[8] then
    update.reason = run[8]
  end
  if playbackId and playbackId ~= '' then update.playbackId = playbackId end
  if run[7] then
    local ok, receipt = pcall(cjson.decode, run[7])
    if ok and type(receipt) == 'table' and type(receipt.input) == 'table' then
      update.input = { mode = receipt.input.mode, phase = receipt.input.phase }
    end
  end
  local log, seqKey = base .. ':run-updates', base .. ':run-updates:seq'
  local seq = redis.call('INCR', seqKey)
  if seq == 1 then
    -- The counter was absent (e.g. restored data): continue after the log's newest entry, never below it.
    local newest = redis.call('XREVRANGE', log, '+', '-', 'COUNT', 1)[1]
    if newest then
      seq = (tonumber(string.match(newest[1], '^0%-(%d+)$')) or 0) + 1
      redis.call('SET', seqKey, seq)
    end
  end
  local payload = cjson.encode(update)
  redis.call('XADD', log, 'MAXLEN', '~', 500, '0-' .. seq, 'payload', payload)
  redis.call('PUBLISH', log,
    '{"deviceId":' .. cjson.encode(run[1]) .. ',"updateId":' .. seq .. ',"update":' .. payload .. '}')
end
