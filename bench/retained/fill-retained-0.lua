-- Bench only: writes results [from, to) of the synthetic retained set server-side, in the store layout of
-- docs/architecture.md (the records the services write for a played, resolved result, field for field), spread over
-- `devices` devices. Args {prefix (the key prefix), from, to, devices, at (epoch ms the records are stamped with)};
-- answers {written}. No declared keys: a bench on one private redis-server, never Cluster.
--!include os-keys.lua
--!include harness-keys.lua
local args = cjson.decode(ARGV[1])
local prefix, from, to, devices, at = args.prefix, args.from, args.to, args.devices, args.at
local text = 'The build passed and the three failing tests are fixed; the deploy is waiting for your approval.'
local instance = 'prefill-instance'
for n = from, to - 1 do
  local device = 'prefill-device-' .. (n % devices)
  local agent = 'prefill-agent-' .. (n % 8)
  local id = string.format('%08x-fill', n)
  local run_id, request_id, key, delivery_id, result_id, playback_id =
    'run-' .. id, 'req-' .. id, 'key-' .. id, 'del-' .. id, 'res-' .. id, 'pb-' .. id
  local result_key = instance .. '|' .. result_id
  local stamp = at + n
  local h = prefix .. ':h:{d:' .. device .. '}'
  redis.call('HSET', harness_keys.reservation(h, key), 'receipt', cjson.encode({idempotencyKey = key, deliveryId = delivery_id,
    state = 'completed', resultId = result_id, at = stamp}), 'hash', string.rep('0', 64), 'resultId', result_id)
  redis.call('ZADD', harness_keys.reservations(h), stamp, key)
  redis.call('ZADD', harness_keys.terminalReservations(h), stamp, key)
  redis.call('HSET', harness_keys.result(h, result_id), 'payload', cjson.encode({resultId = result_id, agentId = agent,
    outcome = 'completed', fullText = text, members = {key}}), 'agentId', agent, 'machineId', 'machine-prefill',
    'outcome', 'completed', 'scope', 'single', 'singleKey', key, 'singleTurnId', 'turn-' .. id, 'storedAt', stamp)
  redis.call('ZADD', harness_keys.results(h), stamp, result_id)
  redis.call('XADD', harness_keys.eventLog(h), 'MAXLEN', 10000, '0-' .. (n + 1), 'e',
    cjson.encode({kind = 'result', resultId = result_id, at = stamp}))
  local os = prefix .. ':os:{d:' .. device .. '}'
  redis.call('HSET', os_keys.run(os, run_id), 'runId', run_id, 'deviceId', device, 'agentId', agent,
    'machineId', 'machine-prefill', 'idempotencyKey', key, 'requestId', request_id, 'text', 'What is the build status?',
    'voiceTargetId', 'target-1', 'voiceTargetExpiresAt', stamp + 900000, 'replyRoute', 'voice', 'state', 'resolved',
    'outcome', 'completed', 'resultId', result_id, 'deliveryId', delivery_id,
    'serverInstanceId', instance, 'receiptState', 'completed', 'createdAt', stamp, 'resolvedAt', stamp)
  redis.call('ZADD', os_keys.runs(os), stamp, run_id)
  redis.call('SET', os_keys.request(os, request_id), run_id)
  redis.call('SET', os_keys.idempotencyKey(os, key), run_id)
  redis.call('SET', os_keys.delivery(os, delivery_id), run_id)
  redis.call('HSET', os_keys.result(os, result_key), 'resultId', result_id, 'serverInstanceId', instance,
    'deviceId', device, 'agentId', agent, 'outcome', 'completed', 'fullText', text, 'engineTurnId', 'turn-' .. id,
    'members', cjson.encode({{runId = run_id, deliveryId = delivery_id, idempotencyKey = key}}),
    'contentHash', string.rep('0', 64), 'storedAt', stamp, 'emittedAt', stamp)
  redis.call('SET', os_keys.resultId(os, result_id), result_key)
  redis.call('HSET', os_keys.outbox(os, result_key), 'state', 'played', 'playbackId', playback_id,
    'voiceTargetId', 'target-1', 'speechText', text, 'lastAck', 'finished', 'queuedAt', stamp, 'playedAt', stamp)
  redis.call('HSET', os_keys.playback(os, playback_id), 'resultKey', result_key, 'kind', 'answer', 'state', 'played',
    'voiceTargetId', 'target-1', 'text', text, 'gatewayId', 'device-gateway-prefill', 'lastAck', 'finished',
    'playedAt', stamp)
end
return cjson.encode({written = to - from})
