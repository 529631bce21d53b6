-- Binds a Harness receipt to the run registered under its idempotency key (bind-receipt.lua says how).
-- KEYS[1] = B; ARGV: idempotencyKey, agentId, deliveryId, serverInstanceId, receiptState, receiptJson, now
--!include bind-receipt.lua
return bind_receipt(KEYS[1], ARGV)
