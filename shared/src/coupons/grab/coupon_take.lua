-- (records.lua and journal.lua are prepended: int, journal_add.)
-- coupon_take.lua: step 2 of a grab whose home pool is empty: take one code of this pool for a
-- reservation made in another pool (see coupon_grab.lua). The step has one outcome per
-- reservation and pool, recorded here before it is answered, first run wins: every later run
-- of the same reservation on this pool (a re-sent call, a second request of the user,
-- reclaim-cron's re-drive) reads it and answers the same, so every run of a reservation walks
-- the pools to the same code, or to none.
--
-- helpers: records.lua journal.lua
-- acknowledged: WAIT for REDIS_WAIT_REPLICAS replicas before the answer
-- redis users: app
-- KEYS[1] pool: this pool's hash (see coupon_create_pool.lua)
-- KEYS[2] codes: this pool's un-issued uploaded codes (list)
-- KEYS[3] issued: this pool's issued codes: code or index -> "<user>\n<grabbed_at_ms>"
-- KEYS[4] loans: this pool's outcomes for reservations: reservation id -> "<code>:<at_ms>" (a
--         code of this pool issued for it), "-" (nothing taken here for it: no code left, or
--         the pool closed) or "~" (nothing taken here for it: the pool was not written yet)
-- KEYS[5] journal: this pool's tag's journal (journal.lua): a code taken appends coupon_issued
-- KEYS[6] issued_by_time: this pool's issued codes by time: a code taken adds
--         "<grabbed_at_ms, 13 digits>:<item>" at score 0 (see coupon_grab.lua)
-- ARGV[1] user_id: the user the reservation is for
-- ARGV[2] reservation: the reservation id (recorded in the user's home pool)
-- ARGV[3] pool_no (u32): this pool's number (0-based), written into the item
-- ARGV[4] campaign_id: the campaign (the journal entry's reference is "<campaign_id>/<code>")
--
-- Returns:
--   'taken:<item>:<grabbed_at_ms>'   a code of this pool is the reservation's (now, or by an
--                                    earlier run: the same item)
--   'empty'                          nothing for the reservation here: no code left or the
--                                    pool is closed (coupon_close.lua), now or at an earlier run
--   'unwritten'                      nothing for the reservation here: the pool was not written
--                                    yet (the campaign's creation still running; a pool gets
--                                    its codes after the start only so), now or at an earlier
--                                    run. The walk goes on, and a reservation that ends with
--                                    no code after such a pool is resolved as "opening"
--                                    (coupon_resolve.lua), not as sold out: the pool may hold
--                                    codes for the next grab
-- The code is issued to the user here, so a redeem finds it in this pool; the user's home
-- pool records it when the reservation is resolved (coupon_resolve.lua).
local loan = redis.call('HGET', KEYS[4], ARGV[2])
if loan then
  if loan == '-' then
    return 'empty'
  end
  if loan == '~' then
    return 'unwritten'
  end
  local code, at = string.match(loan, '^(.*):(%d+)$')
  return 'taken:' .. ARGV[3] .. '/' .. code .. ':' .. at
end
local meta = redis.call('HMGET', KEYS[1], 'kind', 'next', 'end', 'closed')
if not meta[1] then
  redis.call('HSET', KEYS[4], ARGV[2], '~')
  return 'unwritten'
end
local code
if not meta[4] then
  if meta[1] == 'generated' then
    if tonumber(meta[2]) < tonumber(meta[3]) then
      code = meta[2]
      redis.call('HINCRBY', KEYS[1], 'next', 1)
    end
  else
    code = redis.call('LPOP', KEYS[2])
  end
end
if not code then
  redis.call('HSET', KEYS[4], ARGV[2], '-')
  return 'empty'
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local stamp = string.format('%d', now)
redis.call('HSET', KEYS[3], code, ARGV[1] .. '\n' .. stamp)
redis.call('HSET', KEYS[4], ARGV[2], code .. ':' .. stamp)
redis.call('HINCRBY', KEYS[1], 'issued', 1)
redis.call('ZADD', KEYS[6], 0, string.format('%013d', now) .. ':' .. ARGV[3] .. '/' .. code)
journal_add(KEYS[5], 'coupon_issued', ARGV[1], 0, ARGV[4] .. '/' .. code, now, 0, '')
return 'taken:' .. ARGV[3] .. '/' .. code .. ':' .. stamp
