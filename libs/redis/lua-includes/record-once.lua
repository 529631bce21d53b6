-- Appends payloadJson to the audit stream `<base>:<log>` once per identity (a redelivered event adds nothing);
-- returns 1 when this call recorded it, 0 when it was already there.
local function record_once(base, log, identity, payloadJson)
  local ids = base .. ':' .. log .. '-ids'
  if redis.call('SISMEMBER', ids, identity) == 1 then
    return 0
  end
  redis.call('XADD', base .. ':' .. log, '*', 'payload', payloadJson)
  redis.call('SADD', ids, identity)
  return 1
end
