-- coupon_issued_page.lua: one page of one pool's issued coupons, newest first, each with its
-- record and its last release, read in one step; nothing written.
--
-- redis users: app
-- KEYS[1] issued_by_time: the pool's issued codes by time, members
--         "<grabbed_at_ms, 13 digits>:<item>" (see coupon_grab.lua)
-- KEYS[2] issued: the pool's issued codes: code or index -> the record, "<code>\n" -> the
--         coupon's last release (see coupon_record.lua)
-- ARGV[1] before: the page holds the members below this one (the cursor: the last member of
--         the page before), or '' for the newest
-- ARGV[2] limit (u32): at most this many coupons (the API allows 1 to 100)
--
-- Returns {now_ms, member, record, released_at_ms, member, record, released_at_ms, ...}: the
-- members newest first (byte order, descending), a record '' when the pool's keys are gone, a
-- released_at_ms '' for a coupon never released.
-- Redis commands: TIME, ZRANGE BYLEX REV LIMIT over the page, HMGET of 2 fields a coupon:
-- O(limit) whatever the pool's size.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local max = '+'
if ARGV[1] ~= '' then
  max = '(' .. ARGV[1]
end
local members = redis.call('ZRANGE', KEYS[1], max, '-', 'BYLEX', 'REV', 'LIMIT', 0,
  tonumber(ARGV[2]))
local out = { string.format('%d', now) }
for _, member in ipairs(members) do
  local code = string.match(member, '^%d+:%d+/(.*)$')
  local found = redis.call('HMGET', KEYS[2], code, code .. '\n')
  out[#out + 1] = member
  out[#out + 1] = found[1] or ''
  out[#out + 1] = found[2] or ''
end
return out
