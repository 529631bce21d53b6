-- Binds a Harness receipt to the run registered under its idempotency key: deliveryId and the originating
-- instance are set once; a receipt naming another delivery or instance for a bound run is a conflict, not a rebind.
-- The stored receipt only moves forward (queued < delivered < started < terminal, terminal final), as on the
-- Harness: a duplicated or reordered older receipt.updated (or receipt.get answer) refreshes nothing.
-- A pending run whose receipt ends `unknown` or `rejected` can never get a result: it ends `unknown` at once, with
-- the receipt's error code as its reason. Every change of a pending run's receipt (state or input) is a run.update,
-- but `completed`: the Harness completes a receipt only in the step that stores the result listing it, so the run's
-- `resolved` update, which carries the outcome, follows it.
-- bind_receipt(B, argv): argv = {idempotencyKey, agentId, deliveryId, serverInstanceId, receiptState, receiptJson,
--   now, runIdHint}; runIdHint ('' = none) names the run the caller believes holds the key (it is checked, and the key
--   index read only when it is wrong); returns {outcome, runId}.
--!include receipt-rank.lua
--!include run-update.lua
local BIND_FIELDS = { 'idempotencyKey', 'agentId', 'deliveryId', 'serverInstanceId' }
for _, field in ipairs(RUN_UPDATE_FIELDS) do BIND_FIELDS[#BIND_FIELDS + 1] = field end

local function bind_receipt(base, argv)
  local runId, run = argv[8], nil
  if runId and runId ~= '' then
    run = read_run_fields(base, runId, BIND_FIELDS)
    if run.idempotencyKey ~= argv[1] then run = nil end
  end
  if not run then
    runId = redis.call('GET', base .. ':key:' .. argv[1])
    if not runId then
      return { 'unknown_key', '' }
    end
    run = read_run_fields(base, runId, BIND_FIELDS)
  end
  local runKey = base .. ':run:' .. runId
  if run.agentId ~= argv[2] then
    return { 'agent_mismatch', runId }
  end
  if (run.deliveryId and run.deliveryId ~= argv[3]) or (run.serverInstanceId and run.serverInstanceId ~= argv[4]) then
    return { 'conflict', runId }
  end
  -- A run already bound to this delivery holds its index entry: only a first binding checks and writes it.
  local first_binding = not run.deliveryId
  if first_binding then
    local holder = redis.call('GET', base .. ':delivery:' .. argv[3])
    if holder and holder ~= runId then
      return { 'conflict', runId }
    end
  end
  local held, incoming = RECEIPT_RANK[run.receiptState], RECEIPT_RANK[argv[5]] or 0
  if held and (incoming < held or (held == 3 and run.receiptState ~= argv[5])) then
    return { 'stale', runId }
  end

  -- The receipt is kept field by field (run-record.ts, runReceipt): what only the receipt says, beside the ids the
  -- run holds anyway. It is the last receipt, not a merge: a field the new one lacks goes.
  local ok, receipt = pcall(cjson.decode, argv[6])
  if not ok or type(receipt) ~= 'table' then receipt = {} end
  local fields, gone = { 'deliveryId', argv[3], 'serverInstanceId', argv[4], 'receiptState', argv[5] }, {}
  local function keep(field, value)
    if value == nil or value == cjson.null or value == false then
      gone[#gone + 1] = field
    else
      fields[#fields + 1] = field
      fields[#fields + 1] = value
    end
  end
  local input = type(receipt.input) == 'table'
    and tostring(receipt.input.mode) .. '/' .. tostring(receipt.input.phase)
  keep('receiptInput', input)
  keep('receiptTurnId', receipt.turnId)
  keep('receiptAt', type(receipt.at) == 'number' and string.format('%.0f', receipt.at))
  keep('receiptError', type(receipt.error) == 'table' and cjson.encode(receipt.error))
  local function write_run()
    redis.call('HSET', runKey, unpack(fields))
    if #gone > 0 then redis.call('HDEL', runKey, unpack(gone)) end
  end
  local changed = run.receiptState ~= argv[5] or (run.receiptInput or false) ~= input
  local pending = run.state == 'pending'

  if first_binding then redis.call('SET', base .. ':delivery:' .. argv[3], runId) end
  -- From here `run` is the run as this step leaves it: the run.update carries it.
  run.receiptState, run.receiptInput = argv[5], input
  if pending and changed and (argv[5] == 'unknown' or argv[5] == 'rejected') then
    local code = type(receipt.error) == 'table' and receipt.error.code
    if type(code) ~= 'string' or code == '' then
      code = argv[5] == 'rejected' and 'INPUT_REJECTED' or 'RECEIPT_UNKNOWN'
    end
    keep('state', 'unknown')
    keep('endReason', code)
    write_run()
    redis.call('ZREM', base .. ':runs:pending', runId)
    run.state, run.endReason = 'unknown', code
    append_run_update(base, runId, run, 'unknown', code, '', argv[7])
  else
    write_run()
    if pending and changed and argv[5] ~= 'completed' then
      append_run_update(base, runId, run, 'receipt', '', '', argv[7])
    end
  end
  if not first_binding then
    return { 'refreshed', runId }
  end
  return { 'bound', runId }
end
