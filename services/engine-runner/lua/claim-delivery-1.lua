-- Claims one input's delivery marker on one agent (KEYS[1] = <agent base>:runner:delivery:<deliveryId>): read and
-- first write in one step, so two runners redelivered the same input never both see it as new.
-- Args {ttlSeconds}. The first claim stores "claimed" and answers {claim = 'new'}; later claims answer
-- {claim = 'existing', state} with the stored state unchanged.
local args = cjson.decode(ARGV[1])
local current = redis.call("GET", KEYS[1])
if current then
  return cjson.encode({claim = "existing", state = current})
end
redis.call("SET", KEYS[1], "claimed", "EX", args.ttlSeconds)
return cjson.encode({claim = "new"})
