-- history_page.lua: one page of a user's "sent" or "received" history, newest first
-- (read only). Entries older than the retention are not shown even before a write prunes
-- them (lua/history.lua prunes a bounded batch per write).
--
-- redis users: app
-- KEYS[1] list: the list (sorted set, every score 0; members `<13-digit ms>:<packet_id>:...`)
-- ARGV[1] upper: upper bound: '+' for the first page, else '(' .. the cursor's
--         `<ms>:<packet_id>`
-- ARGV[2] limit (u32): entries to return
-- ARGV[3] retention_ms (u64): history retention, ms
-- Returns the members, newest first.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local cutoff = math.max(now - tonumber(ARGV[3]), 0)
return redis.call('ZREVRANGEBYLEX', KEYS[1], ARGV[1], '[' .. string.format('%013d', cutoff),
  'LIMIT', 0, tonumber(ARGV[2]))
