-- A receipt.updated event in one step: its receipt bound (bind-receipt.lua), then the event staged as ignored and the
-- cursor moved past it (stage-event.lua), as the two scripts would one after the other, in one round trip.
-- KEYS[1] = B
-- ARGV[1..7]: bind_receipt's argv; ARGV[8..17]: stage_event's argv. Returns {outcome, runId}, or LEASE_LOST.
--!include bind-receipt.lua
--!include stage-event.lua
local bound = bind_receipt(KEYS[1], { unpack(ARGV, 1, 7) })
local staged = stage_event(KEYS[1], { unpack(ARGV, 8, 17) })
if type(staged) == 'table' and staged.err then
  return staged
end
return bound
