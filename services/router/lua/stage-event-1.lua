-- Records what the router decided about one Harness frame and advances the resume cursor in the same atomic step,
-- so a decision is never recorded without the cursor passing its frame, nor the cursor passing a frame undecided.
-- Fenced by the device lease: a replica that lost the lease must not move the cursor.
-- KEYS[1] = B
-- ARGV[1] = {leaseOwner, action, cursor? {transportInstanceId, cursor} (absent: leave the cursor), and by action:
--   routed {waitingField?}; reject {waitingField?, rejectionId, rejectionJson};
--   protocol_error {waitingField?, protocolErrorId, protocolErrorJson}; wait {waitingField, waitingJson};
--   ignore {}; resync {}}. Records go in as JSON text, kept byte for byte.
-- Reply: {recorded} (true when a rejection or protocol error was newly recorded), or the LEASE_LOST error.
--!include os-keys.lua
--!include record-once.lua
local base = KEYS[1]
local args = cjson.decode(ARGV[1])
if redis.call('GET', os_keys.lease(base)) ~= args.leaseOwner then
  return redis.error_reply('LEASE_LOST')
end
local action, waitingField = args.action, args.waitingField
local recorded = 0
-- Writes that can fail on a damaged key come first: a script is not rolled back, so nothing may precede them.
if action == 'reject' then
  recorded = record_once(base, 'rejections', args.rejectionId, args.rejectionJson)
elseif action == 'protocol_error' then
  recorded = record_once(base, 'protocol-errors', args.protocolErrorId, args.protocolErrorJson)
end
if action == 'wait' then
  -- A replay of a held result keeps the first entry (and so when it was first held).
  redis.call('HSETNX', os_keys.waiting(base), waitingField, args.waitingJson)
elseif waitingField then
  redis.call('HDEL', os_keys.waiting(base), waitingField)
end
local move = args.cursor
if move then
  local cursorKey = os_keys.cursor(base)
  local current = redis.call('HMGET', cursorKey, 'serverInstanceId', 'cursor')
  if action == 'resync' or current[1] ~= move.transportInstanceId or tonumber(current[2]) < move.cursor then
    redis.call('HSET', cursorKey, 'serverInstanceId', move.transportInstanceId, 'cursor',
      string.format('%.0f', move.cursor))
  end
end
return cjson.encode({ recorded = recorded == 1 })
