-- Keeps this gateway instance advertised as the holder of the device's Lamp socket, unless another took it: read and
-- write in one step, so a refresh or release never overwrites or drops another instance's claim made meanwhile.
-- KEYS[1] = presence key; args {gatewayInstanceId, ttlMs, mode: claim | refresh | release}. Answers {outcome}:
-- held | released | not_ours.
local args = cjson.decode(ARGV[1])
local holder = redis.call('GET', KEYS[1])
local ours = holder == args.gatewayInstanceId
if args.mode == 'claim' or (args.mode == 'refresh' and (holder == false or ours)) then
  redis.call('SET', KEYS[1], args.gatewayInstanceId, 'PX', args.ttlMs)
  return cjson.encode({outcome = 'held'})
end
if args.mode == 'release' and ours then
  redis.call('DEL', KEYS[1])
  return cjson.encode({outcome = 'released'})
end
return cjson.encode({outcome = 'not_ours'})
