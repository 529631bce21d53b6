-- Whether the router should hold a Harness session for the device: 1 while its Lamp is connected or it has pending
-- runs, queued commands or held results (and it is not revoked), else 0.
-- KEYS[1] = B
local base = KEYS[1]
if redis.call('EXISTS', base .. ':session-revoked') == 1 then
  return 0
end
if redis.call('EXISTS', base .. ':lamp-presence') == 1
  or redis.call('ZCARD', base .. ':runs:pending') > 0
  or redis.call('XLEN', base .. ':commands') > 0
  or redis.call('HLEN', base .. ':waiting') > 0 then
  return 1
end
return 0
