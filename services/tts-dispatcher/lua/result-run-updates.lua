-- Emits one run.update for every member run of a stored result (`<base>:result:<resultKey>` field `members`, a JSON
-- array of {runId, deliveryId, idempotencyKey}): what happens to a result's playback is news for each run it answers.
-- Like emit_run_update, which it calls, it writes: call it last in a script.
--!include os-keys.lua
--!include emit-run-update.lua
local function emit_for_result_members(base, resultKey, change, reason, playbackId, now)
  local json = redis.call('HGET', os_keys.result(base, resultKey), 'members')
  if not json then return end
  local ok, members = pcall(cjson.decode, json)
  if not ok or type(members) ~= 'table' then return end
  for _, member in ipairs(members) do
    if type(member) == 'table' and type(member.runId) == 'string' then
      emit_run_update(base, member.runId, change, reason, playbackId, now)
    end
  end
end
