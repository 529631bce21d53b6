-- Records what the router decided about one Harness frame and moves the resume cursor (stage-event.lua says how).
-- KEYS[1] = B
-- ARGV: leaseOwner, action ('routed' | 'reject' | 'wait' | 'ignore' | 'resync'), transportInstanceId,
--       cursor ('' = leave the cursor), waitingField, waitingJson, rejectionId, rejectionJson, resultKey, routedAt
--!include stage-event.lua
return stage_event(KEYS[1], ARGV)
