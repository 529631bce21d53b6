-- Binds a Harness receipt to the run registered under its idempotency key: deliveryId and the originating
-- instance are set once; a receipt naming another delivery or instance for a bound run is a conflict, not a rebind.
-- The stored receipt only moves forward (queued < delivered < started < terminal, terminal final), as on the
-- Harness: a duplicated or reordered older receipt.updated (or receipt.get answer) refreshes nothing.
-- A pending run whose receipt ends `unknown` or `rejected` can never get a result: it ends `unknown` at once, with
-- the receipt's error code as its reason. Every change of a pending run's receipt (state or input) is a run.update,
-- but `completed`: the Harness completes a receipt only in the step that stores the result listing it, so the run's
-- `resolved` update, which carries the outcome, follows it.
-- bind_receipt(B, argv): argv = {idempotencyKey, agentId, deliveryId, serverInstanceId, receiptState, receiptJson,
--   now}; returns {outcome, runId}.
--!include receipt-rank.lua
--!include run-update.lua
local function bind_receipt(base, argv)
  local runId = redis.call('GET', base .. ':key:' .. argv[1])
  if not runId then
    return { 'unknown_key', '' }
  end
  local runKey = base .. ':run:' .. runId
  local run = redis.call('HMGET', runKey,
    'agentId', 'deliveryId', 'serverInstanceId', 'receiptState', 'state', 'receipt', unpack(RUN_UPDATE_FIELDS))
  if run[1] ~= argv[2] then
    return { 'agent_mismatch', runId }
  end
  if (run[2] and run[2] ~= argv[3]) or (run[3] and run[3] ~= argv[4]) then
    return { 'conflict', runId }
  end
  -- A run already bound to this delivery holds its index entry: only a first binding checks and writes it.
  local first_binding = not run[2]
  if first_binding then
    local holder = redis.call('GET', base .. ':delivery:' .. argv[3])
    if holder and holder ~= runId then
      return { 'conflict', runId }
    end
  end
  local held, incoming = RECEIPT_RANK[run[4]], RECEIPT_RANK[argv[5]] or 0
  if held and (incoming < held or (held == 3 and run[4] ~= argv[5])) then
    return { 'stale', runId }
  end

  local function inputOf(json)
    if not json then return '' end
    local ok, receipt = pcall(cjson.decode, json)
    if not ok or type(receipt) ~= 'table' or type(receipt.input) ~= 'table' then return '' end
    return tostring(receipt.input.mode) .. '/' .. tostring(receipt.input.phase)
  end
  local changed = run[4] ~= argv[5] or inputOf(run[6]) ~= inputOf(argv[6])

  if first_binding then redis.call('SET', base .. ':delivery:' .. argv[3], runId) end
  local updated = run_update_fields({ unpack(run, 7) })
  updated.receiptState, updated.receipt = argv[5], argv[6]
  if run[5] == 'pending' and changed and (argv[5] == 'unknown' or argv[5] == 'rejected') then
    local ok, receipt = pcall(cjson.decode, argv[6])
    local code = ok and type(receipt) == 'table' and type(receipt.error) == 'table' and receipt.error.code
    if type(code) ~= 'string' or code == '' then
      code = argv[5] == 'rejected' and 'INPUT_REJECTED' or 'RECEIPT_UNKNOWN'
    end
    redis.call('HSET', runKey, 'deliveryId', argv[3], 'serverInstanceId', argv[4],
      'receiptState', argv[5], 'receipt', argv[6], 'state', 'unknown', 'endReason', code)
    redis.call('ZREM', base .. ':runs:pending', runId)
    updated.state, updated.endReason = 'unknown', code
    append_run_update(base, runId, updated, 'unknown', code, '', argv[7])
  else
    redis.call('HSET', runKey, 'deliveryId', argv[3], 'serverInstanceId', argv[4],
      'receiptState', argv[5], 'receipt', argv[6])
    if run[5] == 'pending' and changed and argv[5] ~= 'completed' then
      append_run_update(base, runId, updated, 'receipt', '', '', argv[7])
    end
  end
  if not first_binding then
    return { 'refreshed', runId }
  end
  return { 'bound', runId }
end
