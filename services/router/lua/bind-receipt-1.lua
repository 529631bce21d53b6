-- Binds a Harness receipt to the run registered under its idempotency key: deliveryId and the originating
-- instance are set once; a receipt naming another delivery or instance for a bound run is a conflict, not a rebind.
-- The stored receipt only moves forward (queued < delivered < started < terminal, terminal final), as on the
-- Harness: a duplicated or reordered older receipt.updated (or receipt.get answer) refreshes nothing.
-- A pending run whose receipt ends `unknown` or `rejected` can never get a result: it ends `unknown` at once, with
-- the receipt's error code as its reason. Every change of a pending run's receipt (state or input) is a run.update.
-- KEYS[1] = B; ARGV: idempotencyKey, agentId, deliveryId, serverInstanceId, receiptState, receiptJson, now
--!include receipt-rank.lua
--!include run-update.lua
local base = KEYS[1]
local runId = redis.call('GET', base .. ':key:' .. ARGV[1])
if not runId then
  return { 'unknown_key', '' }
end
local runKey = base .. ':run:' .. runId
local run = redis.call('HMGET', runKey, 'agentId', 'deliveryId', 'serverInstanceId', 'receiptState', 'state', 'receipt')
if run[1] ~= ARGV[2] then
  return { 'agent_mismatch', runId }
end
if (run[2] and run[2] ~= ARGV[3]) or (run[3] and run[3] ~= ARGV[4]) then
  return { 'conflict', runId }
end
-- A run already bound to this delivery holds its index entry: only a first binding checks and writes it.
local first_binding = not run[2]
if first_binding then
  local holder = redis.call('GET', base .. ':delivery:' .. ARGV[3])
  if holder and holder ~= runId then
    return { 'conflict', runId }
  end
end
local held, incoming = RECEIPT_RANK[run[4]], RECEIPT_RANK[ARGV[5]] or 0
if held and (incoming < held or (held == 3 and run[4] ~= ARGV[5])) then
  return { 'stale', runId }
end

local function inputOf(json)
  if not json then return '' end
  local ok, receipt = pcall(cjson.decode, json)
  if not ok or type(receipt) ~= 'table' or type(receipt.input) ~= 'table' then return '' end
  return tostring(receipt.input.mode) .. '/' .. tostring(receipt.input.phase)
end
local changed = run[4] ~= ARGV[5] or inputOf(run[6]) ~= inputOf(ARGV[6])

if first_binding then redis.call('SET', base .. ':delivery:' .. ARGV[3], runId) end
redis.call('HSET', runKey, 'deliveryId', ARGV[3], 'serverInstanceId', ARGV[4],
  'receiptState', ARGV[5], 'receipt', ARGV[6])
if run[5] == 'pending' and changed then
  if ARGV[5] == 'unknown' or ARGV[5] == 'rejected' then
    local ok, receipt = pcall(cjson.decode, ARGV[6])
    local code = ok and type(receipt) == 'table' and type(receipt.error) == 'table' and receipt.error.code
    if type(code) ~= 'string' or code == '' then
      code = ARGV[5] == 'rejected' and 'INPUT_REJECTED' or 'RECEIPT_UNKNOWN'
    end
    redis.call('HSET', runKey, 'state', 'unknown', 'endReason', code)
    redis.call('ZREM', base .. ':runs:pending', runId)
    emit_run_update(base, runId, 'unknown', code, '', ARGV[7])
  else
    emit_run_update(base, runId, 'receipt', '', '', ARGV[7])
  end
end
if not first_binding then
  return { 'refreshed', runId }
end
return { 'bound', runId }
