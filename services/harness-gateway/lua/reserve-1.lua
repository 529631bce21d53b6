-- Reserve (deviceId, idempotencyKey) before anything is dispatched: one atomic step on the device's slot.
-- KEYS[1] = device base. ARGV: idempotencyKey, requestHash, receiptJson, dispatchJson, now, capacity,
-- retentionMs, tokenIssuedAt (epoch seconds of the token's iat).
-- Returns {status, receiptJson}: accepted | duplicate | conflict | backpressure | revoked.
local base = KEYS[1]
local key, hash, receipt, dispatch = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local now, capacity, retention_ms, issued_at = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local order, terminal, undispatched = base .. ':res-order', base .. ':res-terminal', base .. ':undispatched'

-- Same rule as the upgrade check: a token issued in or before the revocation's second is revoked.
local revoked_at = tonumber(redis.call('GET', base .. ':revoked-at') or '-1')
if revoked_at >= 0 and math.floor(revoked_at / 1000) >= issued_at then return {'revoked', ''} end

local existing = redis.call('HMGET', base .. ':res:' .. key, 'hash', 'receipt')
if existing[1] then
  if existing[1] == hash then return {'duplicate', existing[2]} end
  return {'conflict', ''}
end

local function evict(victim)
  redis.call('DEL', base .. ':res:' .. victim)
  redis.call('ZREM', order, victim)
  redis.call('ZREM', terminal, victim)
end

-- Terminal entries past retention go first (bounded work per call); unresolved ones are never evicted.
for _, victim in ipairs(redis.call('ZRANGEBYSCORE', terminal, '-inf', now - retention_ms, 'LIMIT', 0, 64)) do
  evict(victim)
end
if redis.call('ZCARD', order) >= capacity then
  local oldest = redis.call('ZRANGE', terminal, 0, 0)[1]
  if not oldest then return {'backpressure', ''} end
  evict(oldest)
end

redis.call('HSET', base .. ':res:' .. key, 'hash', hash, 'receipt', receipt, 'dispatch', dispatch)
redis.call('ZADD', order, now, key)
redis.call('ZADD', undispatched, now, key)
return {'accepted', receipt}
