-- Claims one input's delivery marker on one agent (KEYS[1] = <agent base>:runner:delivery:<deliveryId>): read and
-- first write in one step, so two runners redelivered the same input never both see it as new.
-- ARGV[1] = TTL in seconds. The first claim stores "claimed" and returns "new"; later claims return the stored
-- state unchanged.
local current = redis.call("GET", KEYS[1])
if current then
  return current
end
redis.call("SET", KEYS[1], "claimed", "EX", ARGV[1])
return "new"
