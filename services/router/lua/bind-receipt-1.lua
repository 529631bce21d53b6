-- Binds a Harness receipt to the run registered under its idempotency key (bind-receipt.lua says how). A receipt
-- that answers one of the device's commands (`B:commands`) also acks and deletes that entry in the same step: the
-- command is done exactly when its answer is bound.
-- KEYS[1] = B; ARGV: idempotencyKey, agentId, deliveryId, serverInstanceId, receiptState, receiptJson, now,
--   runIdHint ('' = none), commandEntryId ('' = the receipt answers no command), commandsGroup
--!include bind-receipt.lua
local bound = bind_receipt(KEYS[1], ARGV)
if ARGV[9] ~= '' then
  local commands = KEYS[1] .. ':commands'
  redis.call('XACK', commands, ARGV[10], ARGV[9])
  redis.call('XDEL', commands, ARGV[9])
end
return bound
