-- Appends one entry to a tail stream (read from `$` without a group) and keeps the stream bounded: capped near
-- `kept` entries, and gone `idleExpiryMs` after its last append (a stopped instance's stream). One step, so no append
-- leaves the stream without its end, and one command on the stream's slot however the cluster moves.
-- KEYS[1] = stream; Args: {field, value, kept, idleExpiryMs}. Answers {id}: the new entry's id.
local stream = KEYS[1]
local args = cjson.decode(ARGV[1])
local id = redis.call('XADD', stream, 'MAXLEN', '~', args.kept, '*', args.field, args.value)
redis.call('PEXPIRE', stream, args.idleExpiryMs)
return cjson.encode({ id = id })
