-- Whether the router should hold a Harness session for the device: while its Lamp is connected or it has pending
-- runs, queued commands or held results, and it is not revoked. One step, so the answer is one moment's truth.
-- KEYS[1] = B; ARGV[1] = {} (no arguments)
-- Reply: {active}
--!include os-keys.lua
local base = KEYS[1]
local function active()
  if redis.call('EXISTS', os_keys.sessionRevoked(base)) == 1 then
    return false
  end
  return redis.call('EXISTS', os_keys.lampPresence(base)) == 1
    or redis.call('ZCARD', os_keys.pendingRuns(base)) > 0
    or redis.call('XLEN', os_keys.commands(base)) > 0
    or redis.call('HLEN', os_keys.waiting(base)) > 0
end
return cjson.encode({ active = active() })
