-- expire_log_by_age: a log with ids `0-<n>` whose entries each carry one field, a JSON payload stamped `at` (epoch
-- ms, appended in about that order), loses its entries stamped before `cut`, oldest first, looking at `limit` entries
-- at most. XTRIM MINID keeps the stream, even empty, so its ids never restart. Returns how many went and the `at` of
-- the oldest entry kept (nil when the page showed none: the log is empty, or the whole page went).
local function expire_log_by_age(key, cut, limit)
  local last_expired, kept_at = nil, nil
  for _, entry in ipairs(redis.call('XRANGE', key, '-', '+', 'COUNT', limit)) do
    local at = tonumber(cjson.decode(entry[2][2]).at) or 0
    if at >= cut then
      kept_at = at
      break
    end
    last_expired = tonumber(string.sub(entry[1], 3))
  end
  if not last_expired then return 0, kept_at end
  return redis.call('XTRIM', key, 'MINID', '0-' .. (last_expired + 1)), kept_at
end
