-- One input's delivery marker on one agent (KEYS[1] = <agent base>:runner:delivery:<deliveryId>).
-- ARGV[1] = "claim" | "advance", ARGV[2] = new state (advance), ARGV[3] = TTL in seconds.
-- claim: the first claim stores "claimed" and returns "new"; later claims return the stored state unchanged.
-- advance: stores the new state and returns the previous one.
local current = redis.call("GET", KEYS[1])
if ARGV[1] == "claim" then
  if current then
    return current
  end
  redis.call("SET", KEYS[1], "claimed", "EX", ARGV[3])
  return "new"
end
redis.call("SET", KEYS[1], ARGV[2], "EX", ARGV[3])
return current or false
