-- emit_run_update: append_run_update (run-update.lua) with the run's fields read from its hash as the calling script
-- left them. Same rule: call it last in a script.
--!include run-update.lua
local function emit_run_update(base, runId, change, reason, playbackId, now)
  append_run_update(base, runId, read_run_fields(base, runId, RUN_UPDATE_FIELDS), change, reason, playbackId, now)
end
