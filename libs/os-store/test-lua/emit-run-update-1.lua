-- Test driver for the run-update include: emits one update for a run, in one step like the scripts that call it.
-- KEYS[1] = B; args {runId, change, reason?, now}; answers {}.
--!include emit-run-update.lua
local args = cjson.decode(ARGV[1])
emit_run_update(KEYS[1], args.runId, args.change, args.reason, nil, args.now)
return cjson.encode({})
