-- Records what the router decided about one Harness frame and advances the resume cursor in the same step,
-- fenced by the device lease (a replica that lost the lease must not move the cursor).
-- stage_event(B, argv): argv = {leaseOwner, action ('routed' | 'reject' | 'wait' | 'ignore' | 'resync'),
--   transportInstanceId, cursor ('' = leave the cursor), waitingField, waitingJson, rejectionId, rejectionJson,
--   resultKey, routedAt}; returns 1 when a rejection was newly recorded, else 0, or the LEASE_LOST error reply.
-- A routed result takes its place in the device's speech order (B:speech-order); a re-route keeps the first place.
--!include record-once.lua
local function stage_event(base, argv)
  if redis.call('GET', base .. ':lease') ~= argv[1] then
    return redis.error_reply('LEASE_LOST')
  end
  local action, waitingField = argv[2], argv[5]
  local recorded = 0
  -- Writes that can fail on a damaged key come first: a script is not rolled back, so nothing may precede them.
  if action == 'reject' then
    recorded = record_once(base, 'rejections', argv[7], argv[8])
  end
  if action == 'wait' then
    -- A replay of a held result keeps the first entry (and so when it was first held).
    redis.call('HSETNX', base .. ':waiting', waitingField, argv[6])
  elseif waitingField ~= '' then
    redis.call('HDEL', base .. ':waiting', waitingField)
  end
  if action == 'routed' then
    redis.call('ZADD', base .. ':speech-order', 'NX', argv[10], argv[9])
  end
  if argv[4] ~= '' then
    local cursorKey = base .. ':cursor'
    local current = redis.call('HMGET', cursorKey, 'serverInstanceId', 'cursor')
    local incoming = tonumber(argv[4])
    if action == 'resync' or current[1] ~= argv[3] or tonumber(current[2]) < incoming then
      redis.call('HSET', cursorKey, 'serverInstanceId', argv[3], 'cursor', argv[4])
    end
  end
  return recorded
end
