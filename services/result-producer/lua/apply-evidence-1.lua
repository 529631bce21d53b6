-- Applies one device's pieces of engine evidence, in order, to its Harness store in one atomic step: receipt
-- transitions, immutable results, and the device event-log entries they cause (one eventId range, one notice).
-- Redelivery changes nothing: a receipt only moves forward (receipt-rank.lua), so a transition seen again finds its
-- receipt already there; a result's evidenceId is kept on each member's reservation (`resultEvidence`, beside
-- `resultId`), so the same evidence again answers `duplicate` with the first resultId (a regenerated one is never
-- used) and other evidence naming a member already in a result is withheld.
-- KEYS[1] = device base. ARGV: now, eventsChannel, deviceId, eventCapacity, then per piece: op, evidenceId, argsJson.
-- Returns per piece {status, detail}: applied | withheld | duplicate (nothing left to change).
local base = KEYS[1]
local now, channel, device_id, event_capacity = tonumber(ARGV[1]), ARGV[2], ARGV[3], tonumber(ARGV[4])
local log_key = base .. ':event-log'

--!include receipt-rank.lua
local events = {}

local function append_event(body)
  body.at = now
  events[#events + 1] = cjson.encode(body)
end

local function load_receipt(key)
  local raw = redis.call('HGET', base .. ':res:' .. key, 'receipt')
  if not raw then return nil end
  return cjson.decode(raw)
end

-- `extra`: more fields of the reservation written in the same HSET.
local function save_receipt(key, receipt, extra)
  receipt.at = now
  local fields = extra or {}
  fields[#fields + 1] = 'receipt'
  fields[#fields + 1] = cjson.encode(receipt)
  redis.call('HSET', base .. ':res:' .. key, unpack(fields))
  if RECEIPT_RANK[receipt.state] == 3 then redis.call('ZADD', base .. ':res-terminal', now, key) end
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
  local over = redis.call('ZCARD', base .. ':results') - capacity
  if over <= 0 then return end
  local oldest = redis.call('ZRANGE', base .. ':results', 0, math.min(over, 256) - 1)
  redis.call('ZREM', base .. ':results', unpack(oldest))
  for _, result_id in ipairs(oldest) do redis.call('DEL', base .. ':result:' .. result_id) end
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
    reservations[index] = redis.call('HMGET', base .. ':res:' .. member.key, 'receipt', 'resultId', 'resultEvidence')
  end
  local first = reservations[1]
  if first[3] == evidence_id and first[2] then return {'duplicate', first[2]} end
  for index, member in ipairs(args.members) do
    local problem = member_problem(member, reservations[index], args.agentId)
    if problem then
      mark_unknown(args.members, 'RESULT_EVIDENCE_MISSING', 'membership not proven: ' .. problem)
      return {'withheld', 'RESULT_EVIDENCE_MISSING'}
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
      redis.call('HSET', base .. ':res:' .. member.key, unpack(claimed))
      redis.call('ZADD', base .. ':res-terminal', now, member.key)
    end
  end
  local single_key = ''
  if #args.members == 1 then single_key = args.members[1].key else single_turn_id = '' end
  redis.call('HSET', base .. ':result:' .. args.resultId, 'resultId', args.resultId, 'payload', args.payload,
    'agentId', args.agentId, 'machineId', args.machineId, 'outcome', args.outcome, 'scope', args.scope,
    'singleKey', single_key, 'singleTurnId', single_turn_id, 'storedAt', now)
  redis.call('ZADD', base .. ':results', now, args.resultId)
  append_event({kind = 'result', resultId = args.resultId})
  append_event({kind = 'turn.done', agentId = args.agentId, machineId = args.machineId,
    payload = {resultId = args.resultId, outcome = args.outcome}})
  trim_results(args.resultCapacity)
  return {'applied', args.resultId}
end

-- One receipt transition: applied when it moved the receipt, duplicate when the receipt was already there.
local function advance(args, state, change)
  local receipt = advancing(args.key, args.deliveryId, state)
  if not receipt then return {'duplicate', ''} end
  change(receipt)
  return {'applied', ''}
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
    if not receipt or receipt.operation ~= 'turn.stop' then return {'duplicate', ''} end
    receipt.state = 'completed'
    save_receipt(args.key, receipt)
    return {'applied', ''}
  elseif op == 'unknown' then
    if mark_unknown(args.members, args.code, args.message) then return {'withheld', args.code} end
    return {'duplicate', args.code}
  elseif op == 'result' then
    return store_result(evidence_id, args)
  end
end

local OPS = {delivered = true, consumed = true, rejected = true, stop_confirmed = true, unknown = true, result = true}
for index = 5, #ARGV, 3 do
  if not OPS[ARGV[index]] then return redis.error_reply('apply-evidence: unknown op ' .. ARGV[index]) end
end
local answers = {}
for index = 5, #ARGV, 3 do
  answers[#answers + 1] = apply(ARGV[index], ARGV[index + 1], cjson.decode(ARGV[index + 2]))
end

if #events > 0 then
  local seq_key = base .. ':event-seq'
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
  redis.call('PUBLISH', channel, device_id)
end
return answers
