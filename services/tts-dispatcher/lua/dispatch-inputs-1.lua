-- What the dispatch of one resolved result reads, in one step (KEYS[1] = device base B): the result's outbox entry
-- when it has one (a redelivery: the entry decides), else the stored result and each of its member runs, in the order
-- of its members. One step so the result and its runs are read as one consistent view.
-- Args: {resultKey}. Replies {outbox} when the entry exists, else {result?, runs?}: each a hash as {field = value};
-- a missing result is left out, as are the runs when it has none; a member without a runId (the result does not
-- parse) reads as an empty run.
--!include os-keys.lua
local base = KEYS[1]
local args = cjson.decode(ARGV[1])

local function hash(key)
  local flat = redis.call('HGETALL', key)
  if #flat == 0 then return nil end
  local fields = {}
  for index = 1, #flat - 1, 2 do fields[flat[index]] = flat[index + 1] end
  return fields
end

local outbox = hash(os_keys.outbox(base, args.resultKey))
if outbox then return cjson.encode({ outbox = outbox }) end
local result = hash(os_keys.result(base, args.resultKey))
if not result then return cjson.encode({}) end
local runs = {}
local ok, members = pcall(cjson.decode, result.members or '[]')
if ok and type(members) == 'table' then
  for _, member in ipairs(members) do
    local run = type(member) == 'table' and type(member.runId) == 'string' and hash(os_keys.run(base, member.runId))
    runs[#runs + 1] = run or {}
  end
end
if #runs == 0 then return cjson.encode({ result = result }) end
return cjson.encode({ result = result, runs = runs })
