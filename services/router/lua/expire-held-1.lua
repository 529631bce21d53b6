-- Gives up a result held in `B:waiting` whose receipts never bound (every run it names has ended): its rejection is
-- recorded once, the frame is kept in the bounded log `B:held-expired`, and it leaves `B:waiting`, in one step, so a
-- result is never both held and given up, nor given up without a trace. 0 when it is no longer held.
-- KEYS[1] = B; ARGV: waitingField, rejectionJson, expiredJson, kept
--!include record-once.lua
local base, field = KEYS[1], ARGV[1]
if redis.call('HEXISTS', base .. ':waiting', field) == 0 then
  return 0
end
-- Writes that can fail on a damaged key come first: a script is not rolled back.
record_once(base, 'rejections', field, ARGV[2])
redis.call('XADD', base .. ':held-expired', 'MAXLEN', ARGV[4], '*', 'payload', ARGV[3])
redis.call('HDEL', base .. ':waiting', field)
return 1
