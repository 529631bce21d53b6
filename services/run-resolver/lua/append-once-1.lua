-- Appends a record to one of the device's audit streams once per identity (redelivery adds nothing).
-- KEYS[1] = B; ARGV: stream suffix ('rejections' | 'protocol-errors'), identity, payloadJson
--!include record-once.lua
return record_once(KEYS[1], ARGV[1], ARGV[2], ARGV[3])
