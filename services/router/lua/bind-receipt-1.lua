-- Binds a Harness receipt to the run registered under its idempotency key: deliveryId and the originating
-- instance are set once; a receipt naming another delivery or instance for a bound run is a conflict, not a rebind.
-- The stored receipt only moves forward (queued < delivered < started < terminal, terminal final), as on the
-- Harness: a duplicated or reordered older receipt.updated (or receipt.get answer) refreshes nothing.
-- KEYS[1] = B; ARGV: idempotencyKey, agentId, deliveryId, serverInstanceId, receiptState, receiptJson
--!include receipt-rank.lua
local base = KEYS[1]
local runId = redis.call('GET', base .. ':key:' .. ARGV[1])
if not runId then
  return { 'unknown_key', '' }
end
local runKey = base .. ':run:' .. runId
local run = redis.call('HMGET', runKey, 'agentId', 'deliveryId', 'serverInstanceId', 'receiptState')
if run[1] ~= ARGV[2] then
  return { 'agent_mismatch', runId }
end
if (run[2] and run[2] ~= ARGV[3]) or (run[3] and run[3] ~= ARGV[4]) then
  return { 'conflict', runId }
end
local holder = redis.call('GET', base .. ':delivery:' .. ARGV[3])
if holder and holder ~= runId then
  return { 'conflict', runId }
end
local held, incoming = RECEIPT_RANK[run[4]], RECEIPT_RANK[ARGV[5]] or 0
if held and (incoming < held or (held == 3 and run[4] ~= ARGV[5])) then
  return { 'stale', runId }
end
redis.call('SET', base .. ':delivery:' .. ARGV[3], runId)
redis.call('HSET', runKey, 'deliveryId', ARGV[3], 'serverInstanceId', ARGV[4],
  'receiptState', ARGV[5], 'receipt', ARGV[6])
if run[2] then
  return { 'refreshed', runId }
end
return { 'bound', runId }
