-- Appends a record to one of the device's audit streams once per identity (redelivery adds nothing).
-- KEYS[1] = B; ARGV: stream suffix ('rejections' | 'protocol-errors'), identity, payloadJson
local base = KEYS[1]
if redis.call('SADD', base .. ':' .. ARGV[1] .. '-ids', ARGV[2]) == 0 then
  return 0
end
redis.call('XADD', base .. ':' .. ARGV[1], '*', 'payload', ARGV[3])
return 1
