-- Applies one device's pieces of engine evidence, in order, to its Harness store in one atomic step: receipt
-- transitions, immutable results, and the device event-log entries they cause (one eventId range, one notice).
-- Redelivery changes nothing: a receipt only moves forward (receipt-rank.lua), so a transition seen again finds its
-- receipt already there; a result's evidenceId is kept on each member's reservation (`resultEvidence`, beside
-- `resultId`), so the same evidence again answers `duplicate` with the first resultId (a regenerated one is never
-- used) and other evidence naming a member already in a result is withheld.
-- KEYS[1] = device base. Args {now, eventsChannel, deviceId, eventCapacity, pieces = [{op, evidenceId, args}, ...]}.
-- Answers {answers = [{status, detail?}, ...]}, one per piece: applied | withheld | duplicate (nothing left to change).
--!include receipt-rank.lua
--!include harness-keys.lua
local base = KEYS[1]
local batch = cjson.decode(ARGV[1])
local now, event_capacity = batch.now, batch.eventCapacity
local log_key = harness_keys.eventLog(base)
local events = {}

local function append_event(body)
  body.at = now
  events[#events + 1] = cjson.encode(body)
end

local function load_receipt(key)
  local raw = redis.call('HGET', harness_keys.reservation(base, key), 'receipt')
  if not raw then return nil end
  return cjson.decode(raw)
end

-- `extra`: more fields of the reservation written in the same HSET.
local function save_receipt(key, receipt, extra)
  receipt.at = now
  local fields = extra or {}
  fields[#fields + 1] = 'receipt'
  fields[#fields + 1] = cjson.encode(receipt)
  redis.call('HSET', harness_keys.reservation(base, key), unpack(fields))
  if RECEIPT_RANK[receipt.state] == 3 then redis.call('ZADD', harness_keys.terminalReservations(base), now, key) end
  append_event({kind = 'receipt.updated', receipt = receipt})
end

-- The receipt of (key, deliveryId) if it is this device's reservation and still below `state`.
local function advancing(key, delivery_id, state)
  local receipt = load_receipt(key)
  if not receipt or receipt.deliveryId ~= delivery_id then return nil end
  if RECEIPT_RANK[receipt.state] >= RECEIPT_RANK[state] then return nil end
  return receipt
end

local function mark_unknown(members, code, message)
  local changed = false
  for _, member in ipairs(members) do
    local receipt = advancing(member.key, member.deliveryId, 'unknown')
    if receipt then
      receipt.state = 'unknown'
      receipt.error = {code = code, message = message}
      save_receipt(member.key, receipt)
      changed = true
    end
  end
  return changed
end

local function trim_results(capacity)
  local over = redis.call('ZCARD', harness_keys.results(base)) - capacity
  if over <= 0 then return end
  local oldest = redis.call('ZRANGE', harness_keys.results(base), 0, math.min(over, 256) - 1)
  redis.call('ZREM', harness_keys.results(base), unpack(oldest))
  for _, result_id in ipairs(oldest) do redis.call('DEL', harness_keys.result(base, result_id)) end
end

-- A member may join a result only if it is this device's unresolved turn.send of the same agent, not yet in
-- another result. `reservation` = {receiptJson, resultId}.
local function member_problem(member, reservation, agent_id)
  if not reservation[1] then return 'no reservation ' .. member.key end
  local receipt = cjson.decode(reservation[1])
  if receipt.deliveryId ~= member.deliveryId then return 'deliveryId mismatch for ' .. member.key end
  if receipt.operation ~= 'turn.send' then return member.key .. ' is not an input' end
  if receipt.agentId ~= agent_id then return member.key .. ' belongs to another agent' end
  if RECEIPT_RANK[receipt.state] == 3 then return member.key .. ' is already ' .. receipt.state end
  if reservation[2] then return member.key .. ' is in another result' end
  return nil
end

local function store_result(evidence_id, args)
  local reservations = {}
  for index, member in ipairs(args.members) do
    reservations[index] = redis.call('HMGET', harness_keys.reservation(base, member.key), 'receipt', 'resultId', 'resultEvidence')
  end
  local first = reservations[1]
  if first[3] == evidence_id and first[2] then return {status = 'duplicate', detail = first[2]} end
  for index, member in ipairs(args.members) do
    local problem = member_problem(member, reservations[index], args.agentId)
    if problem then
      mark_unknown(args.members, 'RESULT_EVIDENCE_MISSING', 'membership not proven: ' .. problem)
      return {status = 'withheld', detail = 'RESULT_EVIDENCE_MISSING'}
    end
  end
  local single_turn_id = ''
  for index, member in ipairs(args.members) do
    local receipt = cjson.decode(reservations[index][1])
    local claimed = {'resultId', args.resultId, 'resultEvidence', evidence_id}
    if receipt.turnId ~= cjson.null then single_turn_id = receipt.turnId end
    if args.outcome == 'completed' then
      receipt.state = 'completed'
      save_receipt(member.key, receipt, claimed)
    else
      -- A failed or cancelled result leaves the receipt `started` on the wire (no receipt-outcome extension yet),
      -- but the input is over: it is evictable like a terminal receipt, so it stops holding receipt capacity.
      redis.call('HSET', harness_keys.reservation(base, member.key), unpack(claimed))
      redis.call('ZADD', harness_keys.terminalReservations(base), now, member.key)
    end
  end
  local single_key = ''
  if #args.members == 1 then single_key = args.members[1].key else single_turn_id = '' end
  redis.call('HSET', harness_keys.result(base, args.resultId), 'resultId', args.resultId, 'payload', args.payload,
    'agentId', args.agentId, 'machineId', args.machineId, 'outcome', args.outcome, 'scope', args.scope,
    'singleKey', single_key, 'singleTurnId', single_turn_id, 'storedAt', now)
  redis.call('ZADD', harness_keys.results(base), now, args.resultId)
  append_event({kind = 'result', resultId = args.resultId})
  append_event({kind = 'turn.done', agentId = args.agentId, machineId = args.machineId,
    payload = {resultId = args.resultId, outcome = args.outcome}})
  trim_results(args.resultCapacity)
  return {status = 'applied', detail = args.resultId}
end

-- One receipt transition: applied when it moved the receipt, duplicate when the receipt was already there.
local function advance(args, state, change)
  local receipt = advancing(args.key, args.deliveryId, state)
  if not receipt then return {status = 'duplicate'} end
  change(receipt)
  return {status = 'applied'}
end

local function apply(op, evidence_id, args)
  if op == 'delivered' then
    return advance(args, 'delivered', function(receipt)
      receipt.state = 'delivered'
      receipt.input = {mode = args.mode, phase = 'submitted'}
      save_receipt(args.key, receipt)
    end)
  elseif op == 'consumed' then
    return advance(args, 'started', function(receipt)
      receipt.state = 'started'
      if receipt.turnId == cjson.null then receipt.turnId = args.turnId end
      local mode = 'direct'
      if type(receipt.input) == 'table' then mode = receipt.input.mode end
      receipt.input = {mode = mode, phase = 'accepted'}
      save_receipt(args.key, receipt)
      append_event({kind = 'turn.started', agentId = receipt.agentId, machineId = receipt.machineId,
        payload = {idempotencyKey = args.key, deliveryId = args.deliveryId, turnId = receipt.turnId}})
    end)
  elseif op == 'rejected' then
    return advance(args, 'rejected', function(receipt)
      receipt.state = 'rejected'
      receipt.error = {code = args.code or 'INPUT_REJECTED', message = args.reason}
      save_receipt(args.key, receipt)
    end)
  elseif op == 'stop_confirmed' then
    local receipt = advancing(args.key, args.deliveryId, 'completed')
    if not receipt or receipt.operation ~= 'turn.stop' then return {status = 'duplicate'} end
    receipt.state = 'completed'
    save_receipt(args.key, receipt)
    return {status = 'applied'}
  elseif op == 'unknown' then
    if mark_unknown(args.members, args.code, args.message) then return {status = 'withheld', detail = args.code} end
    return {status = 'duplicate', detail = args.code}
  elseif op == 'result' then
    return store_result(evidence_id, args)
  end
end

local OPS = {delivered = true, consumed = true, rejected = true, stop_confirmed = true, unknown = true, result = true}
for _, piece in ipairs(batch.pieces) do
  if not OPS[piece.op] then return redis.error_reply('apply-evidence: unknown op ' .. tostring(piece.op)) end
end
local answers = {}
for _, piece in ipairs(batch.pieces) do
  answers[#answers + 1] = apply(piece.op, piece.evidenceId, piece.args)
end

if #events > 0 then
  local seq_key = harness_keys.eventSequence(base)
  local last = redis.call('INCRBY', seq_key, #events)
  if last == #events then
    -- The counter was absent (e.g. restored data): continue after the log's newest entry, never below it.
    local newest = redis.call('XREVRANGE', log_key, '+', '-', 'COUNT', 1)[1]
    if newest then
      last = (tonumber(string.match(newest[1], '^0%-(%d+)$')) or 0) + #events
      redis.call('SET', seq_key, last)
    end
  end
  for index, body in ipairs(events) do
    redis.call('XADD', log_key, 'MAXLEN', event_capacity, '0-' .. (last - #events + index), 'e', body)
  end
  redis.call('PUBLISH', batch.eventsChannel, batch.deviceId)
end
return cjson.encode({answers = answers})
