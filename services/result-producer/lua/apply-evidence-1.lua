-- Applies one piece of engine evidence to one device's Harness store in one atomic step: receipt transitions,
-- the immutable result, and the device event-log entries they cause. Redelivery of the same evidenceId is a
-- no-op that returns what the first application decided (so a regenerated resultId is never used).
-- KEYS[1] = device base. ARGV: op, evidenceId, now, eventsChannel, deviceId, eventCapacity, argsJson.
-- Returns {status, detail}: applied | withheld | duplicate.
local base = KEYS[1]
local op, evidence_id, now, channel, device_id = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4], ARGV[5]
local event_capacity = tonumber(ARGV[6])
local args = cjson.decode(ARGV[7])

local markers, marker_times = base .. ':evidence', base .. ':evidence-at'
local seen = redis.call('HGET', markers, evidence_id)
if seen then return {'duplicate', seen} end

--!include receipt-rank.lua
local events_appended = 0

local function load_receipt(key)
  local raw = redis.call('HGET', base .. ':res:' .. key, 'receipt')
  if not raw then return nil end
  return cjson.decode(raw)
end

local function append_event(body)
  local event_id = redis.call('INCR', base .. ':event-seq')
  body.at = now
  redis.call('HSET', base .. ':event-body', event_id, cjson.encode(body))
  redis.call('ZADD', base .. ':events', event_id, event_id)
  events_appended = events_appended + 1
end

local function save_receipt(key, receipt)
  receipt.at = now
  redis.call('HSET', base .. ':res:' .. key, 'receipt', cjson.encode(receipt))
  if RECEIPT_RANK[receipt.state] == 3 then redis.call('ZADD', base .. ':res-terminal', now, key) end
  append_event({kind = 'receipt.updated', agentId = receipt.agentId, machineId = receipt.machineId,
    payload = {receipt = receipt, idempotencyKey = key}})
end

-- The receipt of (key, deliveryId) if it is this device's reservation and still below `state`.
local function advancing(key, delivery_id, state)
  local receipt = load_receipt(key)
  if not receipt or receipt.deliveryId ~= delivery_id then return nil end
  if RECEIPT_RANK[receipt.state] >= RECEIPT_RANK[state] then return nil end
  return receipt
end

local function mark_unknown(members, code, message)
  for _, member in ipairs(members) do
    local receipt = advancing(member.key, member.deliveryId, 'unknown')
    if receipt then
      receipt.state = 'unknown'
      receipt.error = {code = code, message = message}
      save_receipt(member.key, receipt)
    end
  end
end

-- Capacity trims only: what is past its retention goes through the retention sweep (expire-retained-1.lua), so
-- this step reads no record to learn its age.
local function oldest_over_capacity(key, capacity)
  local over = redis.call('ZCARD', key) - capacity
  if over <= 0 then return {} end
  return redis.call('ZRANGE', key, 0, math.min(over, 256) - 1)
end

local function trim_log()
  local oldest = oldest_over_capacity(base .. ':events', event_capacity)
  if #oldest == 0 then return end
  redis.call('ZREM', base .. ':events', unpack(oldest))
  redis.call('HDEL', base .. ':event-body', unpack(oldest))
  redis.call('SET', base .. ':event-floor', oldest[#oldest])
end

local function trim_results(capacity)
  local oldest = oldest_over_capacity(base .. ':results', capacity)
  if #oldest == 0 then return end
  redis.call('ZREM', base .. ':results', unpack(oldest))
  for _, result_id in ipairs(oldest) do redis.call('DEL', base .. ':result:' .. result_id) end
end

-- A member may join a result only if it is this device's unresolved turn.send of the same agent, not yet in
-- another result.
local function member_problem(member, agent_id)
  local reservation = base .. ':res:' .. member.key
  local receipt = load_receipt(member.key)
  if not receipt then return 'no reservation ' .. member.key end
  if receipt.deliveryId ~= member.deliveryId then return 'deliveryId mismatch for ' .. member.key end
  if receipt.operation ~= 'turn.send' then return member.key .. ' is not an input' end
  if receipt.agentId ~= agent_id then return member.key .. ' belongs to another agent' end
  if RECEIPT_RANK[receipt.state] == 3 then return member.key .. ' is already ' .. receipt.state end
  if redis.call('HEXISTS', reservation, 'resultId') == 1 then return member.key .. ' is in another result' end
  return nil
end

local function store_result()
  for _, member in ipairs(args.members) do
    local problem = member_problem(member, args.agentId)
    if problem then
      mark_unknown(args.members, 'RESULT_EVIDENCE_MISSING', 'membership not proven: ' .. problem)
      return {'withheld', 'RESULT_EVIDENCE_MISSING'}
    end
  end
  local single_turn_id = ''
  for _, member in ipairs(args.members) do
    redis.call('HSET', base .. ':res:' .. member.key, 'resultId', args.resultId)
    local receipt = load_receipt(member.key)
    if receipt.turnId ~= cjson.null then single_turn_id = receipt.turnId end
    if args.outcome == 'completed' then
      receipt.state = 'completed'
      save_receipt(member.key, receipt)
    else
      -- A failed or cancelled result leaves the receipt `started` on the wire (no receipt-outcome extension yet),
      -- but the input is over: it is evictable like a terminal receipt, so it stops holding receipt capacity.
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

local outcome
if op == 'delivered' then
  local receipt = advancing(args.key, args.deliveryId, 'delivered')
  if receipt then
    receipt.state = 'delivered'
    receipt.input = {mode = args.mode, phase = 'submitted'}
    save_receipt(args.key, receipt)
  end
  outcome = {'applied', ''}
elseif op == 'consumed' then
  local receipt = advancing(args.key, args.deliveryId, 'started')
  if receipt then
    receipt.state = 'started'
    if receipt.turnId == cjson.null then receipt.turnId = args.turnId end
    local mode = 'direct'
    if type(receipt.input) == 'table' then mode = receipt.input.mode end
    receipt.input = {mode = mode, phase = 'accepted'}
    save_receipt(args.key, receipt)
    append_event({kind = 'turn.started', agentId = receipt.agentId, machineId = receipt.machineId,
      payload = {idempotencyKey = args.key, deliveryId = args.deliveryId, turnId = receipt.turnId}})
  end
  outcome = {'applied', ''}
elseif op == 'rejected' then
  local receipt = advancing(args.key, args.deliveryId, 'rejected')
  if receipt then
    receipt.state = 'rejected'
    receipt.error = {code = args.code or 'INPUT_REJECTED', message = args.reason}
    save_receipt(args.key, receipt)
  end
  outcome = {'applied', ''}
elseif op == 'stop_confirmed' then
  local receipt = advancing(args.key, args.deliveryId, 'completed')
  if receipt and receipt.operation == 'turn.stop' then
    receipt.state = 'completed'
    save_receipt(args.key, receipt)
  end
  outcome = {'applied', ''}
elseif op == 'unknown' then
  mark_unknown(args.members, args.code, args.message)
  outcome = {'withheld', args.code}
elseif op == 'result' then
  outcome = store_result()
else
  return redis.error_reply('apply-evidence: unknown op ' .. op)
end

redis.call('HSET', markers, evidence_id, outcome[2])
redis.call('ZADD', marker_times, now, evidence_id)
if events_appended > 0 then
  trim_log()
  redis.call('PUBLISH', channel, device_id)
end
return outcome
