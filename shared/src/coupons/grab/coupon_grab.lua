-- coupon_grab.lua: give the caller a coupon code of a campaign from their home pool, at most
-- the campaign's per_user codes per user, in one round trip. (lua/rate_limit.lua, records.lua
-- and journal.lua are prepended: rl_take, int, journal_add.)
--
-- helpers: rate_limit.lua records.lua journal.lua
-- acknowledged: WAIT for REDIS_WAIT_REPLICAS replicas before the answer
-- redis users: app
-- KEYS[1] pool: the home pool's hash (see coupon_create_pool.lua)
-- KEYS[2] codes: the home pool's un-issued uploaded codes (list)
-- KEYS[3] issued: the home pool's issued codes: item -> "<user>\n<grabbed_at_ms>" (+ the
--         redemption, see coupon_redeem.lua)
-- KEYS[4] holders: the home pool's users: user -> their items in the campaign, space-separated;
--         and "\n<call id>" (a user id holds no newline, so no user is named so) -> the
--         call's one outcome, "<item> <grabbed_at_ms>" (won here, or by the call's reservation
--         resolved with a code), "-" (its reservation resolved with none: sold out), "~" (its
--         reservation resolved with none while the campaign was opening, see
--         coupon_resolve.lua) or "=<items>" (answered already_grabbed while the user held an
--         open reservation, which may yet resolve with none and free a place), so that the call
--         sent again, even after later calls of the same user, answers the same. Any other
--         already_grabbed is final (a user's codes stay theirs) and is not recorded, so a
--         winner's repeated clicks write nothing here
-- KEYS[5] rate: the caller's visit counter in this campaign (see rate_limit.lua)
-- KEYS[6] pending: the home pool's open reservations: reservation id -> "<user>\n<at_ms>"
-- KEYS[7] journal: the home pool's tag's journal (journal.lua): a win appends coupon_issued
-- KEYS[8] issued_by_time: the home pool's issued codes by time: a win adds
--         "<grabbed_at_ms, 13 digits>:<item>" at score 0
-- ARGV[1] user_id: the caller
-- ARGV[2] home (u32): the home pool's number (0-based), written into the caller's items
-- ARGV[3] rate_limit (u32): visits allowed per window (0 = unlimited)
-- ARGV[4] rate_window_ms (u64): the window, ms
-- ARGV[5] reservation: a fresh id of this call (16 hex digits): the reservation's id when the
--         home pool is empty and the campaign has other pools, and the call id of a win
-- ARGV[6] campaign_id: the campaign (the journal entry's reference is "<campaign_id>/<code>")
--
-- An item names a code by its pool: "<pool>/<code>" for an uploaded code, "<pool>/<index>" for
-- a generated one (the function turns the index into the code with the campaign's secret), or
-- is an open reservation "?<reservation>" (a code being taken from another pool, see
-- coupon_take.lua and coupon_resolve.lua), which counts toward per_user like a code.
--
-- Returns one string, the outcome and its data joined by ':':
--   'not_found'                          no such pool (campaign)
--   'ended:<ends_at_ms>'                 Redis TIME is at or past ends_at
--   'rate_limited:<retry_after_ms>'      a visit over the limit (see below); nothing changed
--   'not_started:<starts_at_ms>:<now_ms>'   (a draw campaign before draw_at: '<draw_at_ms>')
--   'already_grabbed:<items>'            the caller holds per_user codes already
--   'empty:<items>'                      the home pool has no code left and the campaign has
--                                        no other pool, or this call's reservation was
--                                        resolved with no code ('' items: none held)
--   'opening:<items>'                    this call's reservation was resolved with no code while
--                                        a pool it passed was not written yet (the campaign's
--                                        creation still running): grab again
--   'reserved:<reservation>'             the home pool has no code left: a reservation for
--                                        one code of another pool is recorded (this call sent
--                                        again answers the same)
--   'grabbed:<item>:<grabbed_at_ms>:<redeem_by_ms>'   won now, or by this call's earlier run
--                                        (or its reservation, resolved with a code)
-- A visit that is answered not_started or already_grabbed counts toward the caller's visit
-- limit (counted in this atomic step): clicking before the start or after winning is
-- what the limit is for. A win is not counted (a user wins at most per_user times), and an
-- ended campaign is answered before the limit (the answer never changes, and a sandbox that has
-- seen it answers without this script).
--
-- Redis commands per path:
--   repeat (limit reached)   HMGET, HMGET, TIME, INCR (+ PEXPIRE opening a window)
--   re-run of a decided call HMGET, HMGET
--   win (uploaded)           HMGET, HMGET, TIME, LPOP, HSET, HSET, HINCRBY, ZADD, XADD
--   win (generated)          HMGET, HMGET, TIME, HSET (issued), HSET (holders), HINCRBY x2,
--                            ZADD, XADD
local meta = redis.call('HMGET', KEYS[1], 'ends_at', 'starts_at', 'per_user', 'kind', 'next',
  'end', 'redeem_by', 'pools', 'draw_at')
if not meta[1] then
  return 'not_found'
end
local user = ARGV[1]
local reservation = ARGV[5]
local held_by = redis.call('HMGET', KEYS[4], user, '\n' .. reservation)
local mine, decided = held_by[1], held_by[2]
if decided and reservation ~= '' then
  if decided == '-' then
    return 'empty:' .. (mine or '')
  end
  if decided == '~' then
    return 'opening:' .. (mine or '')
  end
  if string.sub(decided, 1, 1) == '=' then
    return 'already_grabbed:' .. string.sub(decided, 2)
  end
  local item, at = string.match(decided, '^(%S+) (%d+)$')
  return 'grabbed:' .. item .. ':' .. at .. ':' .. meta[7]
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if now >= tonumber(meta[1]) then
  return 'ended:' .. meta[1]
end
if now < tonumber(meta[2]) then
  local wait = rl_take(KEYS[5], tonumber(ARGV[3]), ARGV[4])
  if wait > 0 then
    return 'rate_limited:' .. wait
  end
  return 'not_started:' .. meta[2] .. ':' .. now
end
-- A draw campaign issues codes only from its draw, and only to its winners: the function asks
-- coupon_draw_enter.lua on pool 0 first and grabs only for a winner. Before draw_at no grab
-- reaches here; if one did, it is answered as before a start (nothing written, not counted).
if meta[9] and now < tonumber(meta[9]) then
  return 'not_started:' .. meta[9] .. ':' .. now
end

if mine and reservation ~= '' and string.find(' ' .. mine .. ' ', ' ?' .. reservation .. ' ', 1, true) then
  return 'reserved:' .. reservation
end
local held = 0
if mine then
  local _, spaces = string.gsub(mine, ' ', ' ')
  held = spaces + 1
end
if held >= tonumber(meta[3]) then
  local wait = rl_take(KEYS[5], tonumber(ARGV[3]), ARGV[4])
  if wait > 0 then
    return 'rate_limited:' .. wait
  end
  if reservation ~= '' and string.find(mine, '?', 1, true) then
    redis.call('HSET', KEYS[4], '\n' .. reservation, '=' .. mine)
  end
  return 'already_grabbed:' .. mine
end

local code
if meta[4] == 'generated' then
  local next_index = tonumber(meta[5])
  if next_index < tonumber(meta[6]) then
    code = string.format('%d', next_index)
    redis.call('HINCRBY', KEYS[1], 'next', 1)
  end
else
  code = redis.call('LPOP', KEYS[2])
end
if not code then
  if tonumber(meta[8]) > 1 and reservation ~= '' then
    local stamp = string.format('%d', now)
    redis.call('HSET', KEYS[4], user, mine and (mine .. ' ?' .. reservation) or ('?' .. reservation))
    redis.call('HSET', KEYS[6], reservation, user .. '\n' .. stamp)
    return 'reserved:' .. reservation
  end
  return 'empty:' .. (mine or '')
end

local item = ARGV[2] .. '/' .. code
local stamp = string.format('%d', now)
redis.call('HSET', KEYS[3], code, user .. '\n' .. stamp)
redis.call('HSET', KEYS[4], user, mine and (mine .. ' ' .. item) or item,
  '\n' .. reservation, item .. ' ' .. stamp)
redis.call('HINCRBY', KEYS[1], 'issued', 1)
redis.call('ZADD', KEYS[8], 0, string.format('%013d', now) .. ':' .. item)
journal_add(KEYS[7], 'coupon_issued', user, 0, ARGV[6] .. '/' .. code, now, 0, '')
return 'grabbed:' .. item .. ':' .. stamp .. ':' .. meta[7]
