-- Appends a record to one of the device's audit streams once per identity (redelivery adds nothing).
-- KEYS[1] = B; ARGV: stream suffix ('rejections' | 'protocol-errors'), identity, payloadJson
local base = KEYS[1]
local ids = base .. ':' .. ARGV[1] .. '-ids'
if redis.call('SISMEMBER', ids, ARGV[2]) == 1 then
  return 0
end
redis.call('XADD', base .. ':' .. ARGV[1], '*', 'payload', ARGV[3])
redis.call('SADD', ids, ARGV[2])
return 1
