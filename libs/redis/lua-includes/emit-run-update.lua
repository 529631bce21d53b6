-- emit_run_update: append_run_update (run-update.lua) with the run's fields read from its hash as the calling script
-- left them. Same rule: call it last in a script.
--!include run-update.lua
-- The run's RUN_UPDATE_FIELDS by name, from an HMGET reply in that order.
local function run_update_fields(values)
  local run = {}
  for index, field in ipairs(RUN_UPDATE_FIELDS) do run[field] = values[index] end
  return run
end

local function emit_run_update(base, runId, change, reason, playbackId, now)
  local values = redis.call('HMGET', base .. ':run:' .. runId, unpack(RUN_UPDATE_FIELDS))
  append_run_update(base, runId, run_update_fields(values), change, reason, playbackId, now)
end
