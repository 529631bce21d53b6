-- Test driver for the run-update include: emits one update for ARGV[1] with change ARGV[2], reason ARGV[3].
-- KEYS[1] = B; ARGV: runId, change, reason, now
--!include emit-run-update.lua
emit_run_update(KEYS[1], ARGV[1], ARGV[2], ARGV[3], '', ARGV[4])
return 1
