-- One replica's lease (a partition's, or a device lease a router gives up). acquire: take it if free; renew: extend
-- it only while ours; release: give it up only while ours. KEYS[1] = the lease; ARGV: owner, ttlMs, mode
local holder = redis.call('GET', KEYS[1])
local mode = ARGV[3]
if mode == 'acquire' and not holder then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
if holder ~= ARGV[1] then
  return 0
end
if mode == 'release' then
  redis.call('DEL', KEYS[1])
else
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 1
