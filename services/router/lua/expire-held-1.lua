-- Gives up a result held in `B:waiting` whose receipts never bound (every run it names has ended): its rejection is
-- recorded once, the frame is kept in the bounded log `B:held-expired`, and it leaves `B:waiting`, in one atomic
-- step, so a result is never both held and given up, nor given up without a trace.
-- KEYS[1] = B; ARGV[1] = {waitingField, rejectionJson, expiredJson, kept}: the records go in as JSON text, kept
-- byte for byte (a decode and encode in Lua would turn an empty array in the frame into an object).
-- Reply: {expired} (false when it is no longer held)
--!include os-keys.lua
--!include record-once.lua
local base = KEYS[1]
local args = cjson.decode(ARGV[1])
if redis.call('HEXISTS', os_keys.waiting(base), args.waitingField) == 0 then
  return cjson.encode({ expired = false })
end
-- Writes that can fail on a damaged key come first: a script is not rolled back.
record_once(base, 'rejections', args.waitingField, args.rejectionJson)
redis.call('XADD', os_keys.heldExpired(base), 'MAXLEN', args.kept, '*', 'payload', args.expiredJson)
redis.call('HDEL', os_keys.waiting(base), args.waitingField)
return cjson.encode({ expired = true })
