-- Revokes a device: records when (older tokens are refused), deletes its receipts, results and event log, and tells
-- every gateway to close its sessions.
-- KEYS[1] = device base. ARGV: now, revocationsChannel, deviceId. Returns {reservations, results, events}.
local base = KEYS[1]
redis.call('SET', base .. ':revoked-at', ARGV[1])
local reservations = redis.call('ZRANGE', base .. ':res-order', 0, -1)
for _, key in ipairs(reservations) do redis.call('DEL', base .. ':res:' .. key) end
local results = redis.call('ZRANGE', base .. ':results', 0, -1)
for _, result_id in ipairs(results) do redis.call('DEL', base .. ':result:' .. result_id) end
local events = redis.call('XLEN', base .. ':event-log')
for _, suffix in ipairs({'res-order', 'res-terminal', 'undispatched', 'results', 'event-log', 'event-seq'}) do
  redis.call('DEL', base .. ':' .. suffix)
end
redis.call('PUBLISH', ARGV[2], ARGV[3])
return {#reservations, #results, events}
