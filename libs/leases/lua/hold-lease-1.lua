-- One replica's lease (a partition's, or a device lease a router gives up). acquire: take it if free; renew: extend
-- it only while ours; release: give it up only while ours. Read and write in one step, so two replicas never both
-- take it and a replica never extends or drops a lease another took meanwhile.
-- KEYS[1] = the lease. Args {owner, ttlMs, step}; answers {outcome}: held | released | not_ours.
local args = cjson.decode(ARGV[1])
local holder = redis.call('GET', KEYS[1])
if args.step == 'acquire' and not holder then
  redis.call('SET', KEYS[1], args.owner, 'PX', args.ttlMs)
  return cjson.encode({outcome = 'held'})
end
if holder ~= args.owner then
  return cjson.encode({outcome = 'not_ours'})
end
if args.step == 'release' then
  redis.call('DEL', KEYS[1])
  return cjson.encode({outcome = 'released'})
end
redis.call('PEXPIRE', KEYS[1], args.ttlMs)
return cjson.encode({outcome = 'held'})
