-- Revokes a device: records when (older tokens are refused), deletes its receipts, results and event log, and tells
-- every gateway to close its sessions. One step, so no reserve or apply lands between the mark and the deletes.
-- KEYS[1] = device base. Args {now, revocationsChannel, deviceId}. Answers {reservations, results, events}: how many
-- of each went.
--!include harness-keys.lua
local base = KEYS[1]
local args = cjson.decode(ARGV[1])
redis.call('SET', harness_keys.revokedAt(base), args.now)
local reservations = redis.call('ZRANGE', harness_keys.reservations(base), 0, -1)
for _, key in ipairs(reservations) do redis.call('DEL', harness_keys.reservation(base, key)) end
local results = redis.call('ZRANGE', harness_keys.results(base), 0, -1)
for _, result_id in ipairs(results) do redis.call('DEL', harness_keys.result(base, result_id)) end
local events = redis.call('XLEN', harness_keys.eventLog(base))
redis.call('DEL', harness_keys.reservations(base), harness_keys.terminalReservations(base),
  harness_keys.undispatched(base), harness_keys.results(base), harness_keys.eventLog(base),
  harness_keys.eventSequence(base))
redis.call('PUBLISH', args.revocationsChannel, args.deviceId)
return cjson.encode({reservations = #reservations, results = #results, events = events})
