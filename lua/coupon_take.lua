-- (records.lua and journal.lua are prepended: int, journal_add.)
-- coupon_take.lua: take one code of a pool for a reservation made in another pool (the caller's
-- home pool was empty, see coupon_grab.lua), at most once per reservation.
--
-- KEYS[1] pool: this pool's hash (see coupon_create_pool.lua)
-- KEYS[2] codes: this pool's un-issued uploaded codes (list)
-- KEYS[3] issued: this pool's issued codes: code or index -> "<user>\n<grabbed_at_ms>"
-- KEYS[4] loans: this pool's codes taken for reservations: reservation id -> "<code>:<at_ms>"
-- KEYS[5] journal: this pool's tag's journal (journal.lua): a code taken appends coupon_issued
-- ARGV[1] user_id: the user the reservation is for
-- ARGV[2] reservation: the reservation id (recorded in the user's home pool)
-- ARGV[3] pool_no: this pool's number (0-based), written into the item
-- ARGV[4] campaign_id: the campaign (the journal entry's reference is "<campaign_id>/<code>")
--
-- Returns:
--   'taken:<item>:<grabbed_at_ms>'   a code of this pool is the reservation's (now, or by an
--                                    earlier run of the same call: the same item)
--   'empty'                          no code left here, or the pool is closed (coupon_close.lua);
--                                    nothing written (never answered once a code was taken for
--                                    the reservation)
--   'not_found'                      no such pool
-- The code is issued to the user here, so a redeem finds it in this pool; the user's home
-- pool records it when the reservation is settled (coupon_settle.lua).
local loan = redis.call('HGET', KEYS[4], ARGV[2])
if loan then
  local code, at = string.match(loan, '^(.*):(%d+)$')
  return 'taken:' .. ARGV[3] .. '/' .. code .. ':' .. at
end
local meta = redis.call('HMGET', KEYS[1], 'kind', 'next', 'end', 'closed')
if not meta[1] then
  return 'not_found'
end
if meta[4] then
  return 'empty'
end
local code
if meta[1] == 'generated' then
  if tonumber(meta[2]) < tonumber(meta[3]) then
    code = meta[2]
    redis.call('HINCRBY', KEYS[1], 'next', 1)
  end
else
  code = redis.call('LPOP', KEYS[2])
end
if not code then
  return 'empty'
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local stamp = string.format('%d', now)
redis.call('HSET', KEYS[3], code, ARGV[1] .. '\n' .. stamp)
redis.call('HSET', KEYS[4], ARGV[2], code .. ':' .. stamp)
redis.call('HINCRBY', KEYS[1], 'issued', 1)
journal_add(KEYS[5], 'coupon_issued', ARGV[1], 0, ARGV[4] .. '/' .. code, now, 0, '')
return 'taken:' .. ARGV[3] .. '/' .. code .. ':' .. stamp
