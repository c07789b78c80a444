-- coupon_close.lua: close one pool of a coupon campaign after its end, once: count what it
-- issued and what it never issued, release the storage of its un-issued uploaded codes, and
-- keep its records until the last coupon's list retention; on pool 0, called last with the
-- other pools' counts, also report the campaign's end in the journal, once. (records.lua and
-- journal.lua are prepended: int, journal_add.)
--
-- helpers: records.lua journal.lua
-- acknowledged: WAIT for REDIS_WAIT_REPLICAS replicas before the answer
-- redis users: app
-- KEYS[1] pool: the pool's hash (see coupon_create_pool.lua)
-- KEYS[2] codes: the pool's un-issued uploaded codes (list)
-- KEYS[3] issued: the pool's issued codes (see coupon_grab.lua)
-- KEYS[4] holders: the pool's users and their items (see coupon_grab.lua)
-- KEYS[5] pending: the pool's open reservations (see coupon_grab.lua)
-- KEYS[6] loans: the pool's codes taken for reservations (see coupon_take.lua)
-- KEYS[7] batches: the pool's batches (see coupon_add_codes.lua)
-- KEYS[8] journal: the pool's tag's journal (pool 0: the campaign_ended entry)
-- KEYS[9] tickets: a draw campaign's entrants (pool 0's; see coupon_draw_enter.lua), expiring
--         with the pool (the draw, run before the close, keeps its figures in the pool hash)
-- KEYS[10] issued_by_time: the pool's issued codes by time (see coupon_grab.lua), expiring
--         with the pool
-- ARGV[1] keep_until_ms (i64): when the pool's keys expire (redeem_by + the list retention), Unix
--         ms
-- ARGV[2] campaign_id: the campaign (the campaign_ended entry's reference)
-- ARGV[3] report: '1' on pool 0 (report the campaign's end), '' on the others
-- ARGV[4] others: pool 0 only: the other pools' counts, "<issued>|<redeemed>|<never_issued>"
--
-- The pool hash gains closed (1), never_issued (codes it never issued) and, on pool 0 once
-- reported, reported ("<issued>|<redeemed>|<never_issued>", the campaign's totals).
-- coupon_take.lua gives nothing from a closed pool, so the counts stay true.
--
-- Returns:
--   'closed:<issued>:<redeemed>:<never_issued>'  the pool's counts (pool 0 with report: the
--                          campaign's, as reported now or by an earlier run of this call)
--   'not_ended:<ends_at_ms>'   Redis TIME is before ends_at; nothing written
--   'pending:<n>'          n reservations of the pool are open (re-drive them first); nothing
--                          written
--   'not_found'            no such pool
local meta = redis.call('HMGET', KEYS[1], 'ends_at', 'kind', 'next', 'end', 'issued',
  'redeemed', 'closed', 'never_issued', 'reported')
if not meta[1] then
  return 'not_found'
end
if meta[9] then
  local i, r, n = string.match(meta[9], '^(%d+)|(%d+)|(%d+)$')
  return 'closed:' .. i .. ':' .. r .. ':' .. n
end
local issued = tonumber(meta[5] or '0')
local redeemed = tonumber(meta[6] or '0')
local never
if meta[7] then
  never = tonumber(meta[8])
else
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  if now < tonumber(meta[1]) then
    return 'not_ended:' .. meta[1]
  end
  local open = redis.call('HLEN', KEYS[5])
  if open > 0 then
    return 'pending:' .. open
  end
  if meta[2] == 'generated' then
    never = tonumber(meta[4]) - tonumber(meta[3])
  else
    never = redis.call('LLEN', KEYS[2])
    redis.call('DEL', KEYS[2])
  end
  redis.call('HSET', KEYS[1], 'closed', 1, 'never_issued', int(never))
  for k = 1, 7 do
    if k ~= 2 then
      redis.call('PEXPIREAT', KEYS[k], ARGV[1])
    end
  end
  redis.call('PEXPIREAT', KEYS[9], ARGV[1])
  redis.call('PEXPIREAT', KEYS[10], ARGV[1])
end
if ARGV[3] ~= '1' then
  return 'closed:' .. int(issued) .. ':' .. int(redeemed) .. ':' .. int(never)
end
local oi, orr, on = string.match(ARGV[4], '^(%d+)|(%d+)|(%d+)$')
local totals = int(issued + tonumber(oi)) .. '|' .. int(redeemed + tonumber(orr)) .. '|'
  .. int(never + tonumber(on))
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', KEYS[1], 'reported', totals)
journal_add(KEYS[8], 'campaign_ended', '', 0, ARGV[2], now, 0, totals)
local i, r, n = string.match(totals, '^(%d+)|(%d+)|(%d+)$')
return 'closed:' .. i .. ':' .. r .. ':' .. n
