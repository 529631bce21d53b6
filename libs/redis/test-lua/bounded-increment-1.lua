-- Increments KEYS[1] by ARGV[1] unless that would pass ARGV[2]; returns the new value or -1.
local value = tonumber(redis.call("GET", KEYS[1]) or "0")
local step = tonumber(ARGV[1])
if value + step > tonumber(ARGV[2]) then
  return -1
end
return redis.call("INCRBY", KEYS[1], step)
