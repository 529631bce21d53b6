-- Increments KEYS[1] by `by` unless that would pass `limit` (args {by, limit}); returns the new value or -1.
local args = cjson.decode(ARGV[1])
local value = tonumber(redis.call("GET", KEYS[1]) or "0")
if value + args.by > args.limit then
  return -1
end
return redis.call("INCRBY", KEYS[1], args.by)
