-- Whether the router should hold a Harness session for the device: while its Lamp is connected or it has pending
-- runs, queued commands or held results, and it is not revoked. One step, so the answer is one moment's truth.
-- KEYS[1] = B; ARGV[1] = {} (no arguments)
-- Reply: {active}
local base = KEYS[1]
local function active()
  if redis.call('EXISTS', base .. ':session-revoked') == 1 then
    return false
  end
  return redis.call('EXISTS', base .. ':lamp-presence') == 1
    or redis.call('ZCARD', base .. ':runs:pending') > 0
    or redis.call('XLEN', base .. ':commands') > 0
    or redis.call('HLEN', base .. ':waiting') > 0
end
return cjson.encode({ active = active() })
