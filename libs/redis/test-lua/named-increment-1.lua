-- Test script: adds `by` to the counter at KEYS[1] unless that passes `limit`; answers what happened, by name.
local args = cjson.decode(ARGV[1])
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
if current + args.by > args.limit then
  return cjson.encode({verdict = 'refused', current = current})
end
return cjson.encode({verdict = 'added', value = redis.call('INCRBY', KEYS[1], args.by)})
