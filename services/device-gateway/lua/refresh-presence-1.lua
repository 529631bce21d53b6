-- Keeps this gateway instance advertised as the holder of the device's Lamp socket, unless another took it.
-- KEYS[1] = presence key; ARGV: gatewayInstanceId, ttlMs, mode ('claim' | 'refresh' | 'release')
local holder = redis.call('GET', KEYS[1])
if ARGV[3] == 'claim' or (ARGV[3] == 'refresh' and (holder == false or holder == ARGV[1])) then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
if ARGV[3] == 'release' and holder == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
