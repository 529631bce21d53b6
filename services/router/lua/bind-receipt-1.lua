-- Binds a Harness receipt to the run registered under its idempotency key: deliveryId and the originating
-- instance are set once; a receipt naming another delivery or instance for a bound run is a conflict, not a rebind.
-- Atomic because the binding, the delivery index, the run's end and its run.update must agree: a receipt bound
-- twice at once would index one delivery under two runs.
-- The stored receipt only moves forward (queued < delivered < started < terminal, terminal final), as on the
-- Harness: a duplicated or reordered older receipt.updated (or receipt.get answer) refreshes nothing.
-- A pending run whose receipt ends `unknown` or `rejected` can never get a result: it ends `unknown` at once, with
-- the receipt's error code as its reason. Every change of a pending run's receipt (state or input) is a run.update,
-- but `completed`: the Harness completes a receipt only in the step that stores the result listing it, so the run's
-- `resolved` update, which carries the outcome, follows it.
-- A receipt that answers one of the device's commands (`B:commands`) also acks and deletes that entry in the same
-- step: the command is done exactly when its answer is bound.
-- KEYS[1] = B
-- ARGV[1] = {idempotencyKey, agentId, deliveryId, serverInstanceId, receiptState, receipt, now,
--   runIdHint? (the run the caller believes holds the key: checked, and the key index read only when it is wrong),
--   command? {entryId, group}}
-- Reply: {outcome = bound | refreshed | stale | unknown_key | agent_mismatch | conflict, runId? }
--!include os-keys.lua
--!include receipt-rank.lua
--!include run-update.lua
local base = KEYS[1]
local args = cjson.decode(ARGV[1])
local BIND_FIELDS = { 'idempotencyKey', 'agentId', 'deliveryId', 'serverInstanceId' }
for _, field in ipairs(RUN_UPDATE_FIELDS) do BIND_FIELDS[#BIND_FIELDS + 1] = field end

local function bind_receipt()
  local runId, run = args.runIdHint, nil
  if runId then
    run = read_run_fields(base, runId, BIND_FIELDS)
    if run.idempotencyKey ~= args.idempotencyKey then run = nil end
  end
  if not run then
    runId = redis.call('GET', os_keys.idempotencyKey(base, args.idempotencyKey))
    if not runId then
      return { outcome = 'unknown_key' }
    end
    run = read_run_fields(base, runId, BIND_FIELDS)
  end
  local runKey = os_keys.run(base, runId)
  if run.agentId ~= args.agentId then
    return { outcome = 'agent_mismatch', runId = runId }
  end
  if (run.deliveryId and run.deliveryId ~= args.deliveryId)
    or (run.serverInstanceId and run.serverInstanceId ~= args.serverInstanceId) then
    return { outcome = 'conflict', runId = runId }
  end
  -- A run already bound to this delivery holds its index entry: only a first binding checks and writes it.
  local first_binding = not run.deliveryId
  if first_binding then
    local holder = redis.call('GET', os_keys.delivery(base, args.deliveryId))
    if holder and holder ~= runId then
      return { outcome = 'conflict', runId = runId }
    end
  end
  local state = args.receiptState
  local held, incoming = RECEIPT_RANK[run.receiptState], RECEIPT_RANK[state] or 0
  if held and (incoming < held or (held == 3 and run.receiptState ~= state)) then
    return { outcome = 'stale', runId = runId }
  end

  -- The receipt is kept field by field (run-record.ts, runReceipt): what only the receipt says, beside the ids the
  -- run holds anyway. It is the last receipt, not a merge: a field the new one lacks goes.
  local receipt = args.receipt
  local fields, gone = { 'deliveryId', args.deliveryId, 'serverInstanceId', args.serverInstanceId, 'receiptState',
    state }, {}
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
  local changed = run.receiptState ~= state or (run.receiptInput or false) ~= input
  local pending = run.state == 'pending'

  if first_binding then redis.call('SET', os_keys.delivery(base, args.deliveryId), runId) end
  -- From here `run` is the run as this step leaves it: the run.update carries it.
  run.receiptState, run.receiptInput = state, input
  if pending and changed and (state == 'unknown' or state == 'rejected') then
    local code = type(receipt.error) == 'table' and receipt.error.code
    if type(code) ~= 'string' or code == '' then
      code = state == 'rejected' and 'INPUT_REJECTED' or 'RECEIPT_UNKNOWN'
    end
    keep('state', 'unknown')
    keep('endReason', code)
    write_run()
    redis.call('ZREM', os_keys.pendingRuns(base), runId)
    run.state, run.endReason = 'unknown', code
    append_run_update(base, runId, run, 'unknown', code, '', args.now)
  else
    write_run()
    if pending and changed and state ~= 'completed' then
      append_run_update(base, runId, run, 'receipt', '', '', args.now)
    end
  end
  if not first_binding then
    return { outcome = 'refreshed', runId = runId }
  end
  return { outcome = 'bound', runId = runId }
end

local bound = bind_receipt()
if args.command then
  local commands = os_keys.commands(base)
  redis.call('XACK', commands, args.command.group, args.command.entryId)
  redis.call('XDEL', commands, args.command.entryId)
end
return cjson.encode(bound)
