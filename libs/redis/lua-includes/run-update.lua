-- Appends one run.update to the device's ordered log `<base>:run-updates` (ids `0-<updateId>`, about the newest 500
-- kept: RUN_UPDATES_KEPT in libs/contract/run-update.ts) and tells the device-gateways on the channel of the same
-- name; the message carries the update ({deviceId, updateId, update}: runUpdateNoticeSchema), so a socket right
-- behind it sends it without reading the log. The update says what the store says: the caller passes the run's
-- RUN_UPDATE_FIELDS as its step left them (emit-run-update.lua reads them from the run hash first). Call it last in
-- a script: it writes, and a script does not roll back.
-- change: receipt | cancelled | resolved | suppressed | playback | unknown; reason, playbackId: '' or nil = none.
--!include os-keys.lua
local RUN_UPDATE_FIELDS = { 'deviceId', 'requestId', 'state', 'outcome', 'resultId', 'receiptState', 'receiptInput',
  'endReason' }

-- The run's `fields` by name (false = absent), in one HMGET.
local function read_run_fields(base, runId, fields)
  local values = redis.call('HMGET', os_keys.run(base, runId), unpack(fields))
  local run = {}
  for index, field in ipairs(fields) do run[field] = values[index] end
  return run
end

-- run: the run's RUN_UPDATE_FIELDS by name (false or nil = absent).
local function append_run_update(base, runId, run, change, reason, playbackId, now)
  if not run.deviceId then return end
  local update = { runId = runId, requestId = run.requestId, state = run.state, change = change, at = tonumber(now) }
  if run.outcome then update.outcome = run.outcome end
  if run.resultId then update.resultId = run.resultId end
  if run.receiptState then update.receiptState = run.receiptState end
  if reason and reason ~= '' then
    update.reason = reason
  elseif change == 'unknown' and run.endReason then
    update.reason = run.endReason
  end
  if playbackId and playbackId ~= '' then update.playbackId = playbackId end
  if run.receiptInput then
    local mode, phase = string.match(run.receiptInput, '^([%w_]+)/([%w_]+)$')
    if mode then update.input = { mode = mode, phase = phase } end
  end
  -- The stream hands out the next id itself (`0-*`) and never reuses one, trimmed or not.
  local log = os_keys.runUpdates(base)
  local payload = cjson.encode(update)
  local seq = string.sub(redis.call('XADD', log, 'MAXLEN', '~', 500, '0-*', 'payload', payload), 3)
  redis.call('PUBLISH', log,
    '{"deviceId":' .. cjson.encode(run.deviceId) .. ',"updateId":' .. seq .. ',"update":' .. payload .. '}')
end
