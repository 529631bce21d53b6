-- Reserve (deviceId, idempotencyKey) before anything is dispatched: one atomic step on the device's slot, so two
-- requests with one key never both reserve, and the capacity count and evictions see every reservation.
-- KEYS[1] = device base. Args {idempotencyKey, requestHash, receiptJson, dispatchJson, now, capacity, retentionMs,
-- tokenIssuedAt (epoch seconds of the token's iat)}.
-- Answers {status, receiptJson?}: accepted | duplicate (with the stored receipt) | conflict | backpressure | revoked.
--!include harness-keys.lua
local base = KEYS[1]
local args = cjson.decode(ARGV[1])
local key, now = args.idempotencyKey, args.now
local order, terminal = harness_keys.reservations(base), harness_keys.terminalReservations(base)

-- Same rule as the upgrade check: a token issued in or before the revocation's second is revoked.
local revoked_at = tonumber(redis.call('GET', harness_keys.revokedAt(base)) or '-1')
if revoked_at >= 0 and math.floor(revoked_at / 1000) >= args.tokenIssuedAt then
  return cjson.encode({status = 'revoked'})
end

local existing = redis.call('HMGET', harness_keys.reservation(base, key), 'hash', 'receipt')
if existing[1] then
  if existing[1] == args.requestHash then return cjson.encode({status = 'duplicate', receiptJson = existing[2]}) end
  return cjson.encode({status = 'conflict'})
end

local function evict(victim)
  redis.call('DEL', harness_keys.reservation(base, victim))
  redis.call('ZREM', order, victim)
  redis.call('ZREM', terminal, victim)
end

-- Terminal entries past retention go first (bounded work per call); unresolved ones are never evicted.
for _, victim in ipairs(redis.call('ZRANGEBYSCORE', terminal, '-inf', now - args.retentionMs, 'LIMIT', 0, 64)) do
  evict(victim)
end
if redis.call('ZCARD', order) >= args.capacity then
  local oldest = redis.call('ZRANGE', terminal, 0, 0)[1]
  if not oldest then return cjson.encode({status = 'backpressure'}) end
  evict(oldest)
end

redis.call('HSET', harness_keys.reservation(base, key), 'hash', args.requestHash, 'receipt', args.receiptJson,
  'dispatch', args.dispatchJson)
redis.call('ZADD', order, now, key)
redis.call('ZADD', harness_keys.undispatched(base), now, key)
return cjson.encode({status = 'accepted'})
