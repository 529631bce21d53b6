-- What the dispatch of one resolved result reads, in one step: the result's outbox entry when it has one (a
-- redelivery: the entry decides), else the stored result and each of its member runs, in the order of its members.
-- KEYS[1] = B; ARGV[1] = resultKey. Returns {outboxFields, resultFields, {runFields, ...}}, each flat as HGETALL;
-- a member without a runId (the result does not parse) reads as an empty run.
local base, resultKey = KEYS[1], ARGV[1]
local outbox = redis.call('HGETALL', base .. ':outbox:' .. resultKey)
if #outbox > 0 then
  return { outbox, {}, {} }
end
local resultHash = base .. ':result:' .. resultKey
local result = redis.call('HGETALL', resultHash)
local membersJson = '[]'
for index = 1, #result - 1, 2 do
  if result[index] == 'members' then membersJson = result[index + 1] end
end
local runs = {}
local ok, members = pcall(cjson.decode, membersJson)
if ok and type(members) == 'table' then
  for _, member in ipairs(members) do
    if type(member) == 'table' and type(member.runId) == 'string' then
      runs[#runs + 1] = redis.call('HGETALL', base .. ':run:' .. member.runId)
    else
      runs[#runs + 1] = {}
    end
  end
end
return { outbox, result, runs }
