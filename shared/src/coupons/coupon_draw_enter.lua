-- coupon_draw_enter.lua: a grab of a draw campaign (draws::rules), on pool 0: until draw_at
-- it enters the caller, after the draw it tells whether they won. (lua/rate_limit.lua is
-- prepended: rl_take.)
--
-- The entrants are pool 0's tickets sorted set: member "<ticket>:<user_id>" at score 0 (the
-- ticket 64 lowercase hex digits, so the set is in ticket order), whatever the caller's home
-- pool. The function computes the ticket from the campaign's seed (kept on pool 0,
-- draws::rules::campaign_seed); the same user entering again adds the same member: one entry
-- per user. Entries open at starts_at and close at draw_at (Redis TIME) or once the draw has
-- run (coupon_draw_run.lua), whichever is first. After the draw an entrant among the first
-- draw_winners tickets is a winner: the function then grabs them a code as any grab
-- (coupon_grab.lua on their home pool, per_user 1), and there are as many codes as winners.
--
-- A repeated entry (or the same call sent again) answers 'entered' again and counts toward
-- the visit limit, as a visit before the start does; a first entry does not.
--
-- helpers: rate_limit.lua
-- acknowledged: WAIT for REDIS_WAIT_REPLICAS replicas before the answer
-- redis users: app
-- KEYS[1] pool: pool 0's hash (see coupon_create_pool.lua; draw_at, draw_winners, drawn_at)
-- KEYS[2] tickets: the campaign's entrants (sorted set, see above)
-- KEYS[3] rate: the caller's visit counter in this campaign (see rate_limit.lua)
-- ARGV[1] user_id: the caller
-- ARGV[2] ticket: the caller's ticket, 64 lowercase hex digits (draws::rules::ticket)
-- ARGV[3] rate_limit (u32): visits allowed per window (0 = unlimited)
-- ARGV[4] rate_window_ms (u64): the window, ms
-- Returns one string, the outcome and its data joined by ':':
--   'not_found'                           no such pool (campaign)
--   'not_started:<starts_at_ms>:<now_ms>' before the start (a counted visit); nothing else
--                                         written
--   'rate_limited:<retry_after_ms>'       a counted visit over the limit; nothing changed
--   'entered:<draw_at_ms>'                the caller is an entrant (now or before)
--   'draw_due:<draw_at_ms>'               entries have closed and the draw has not run: run
--                                         it (coupon_draw_run.lua), then ask again; nothing
--                                         written
--   'winner'                              the draw has run and the caller won: grab their code
--   'not_drawn'                           the draw has run and the caller did not win (or
--                                         did not enter)
local meta = redis.call('HMGET', KEYS[1], 'starts_at', 'draw_at', 'drawn_at', 'draw_winners')
if not meta[1] then
  return 'not_found'
end
if not meta[2] then
  return redis.error_reply('ERR hongbao: coupon_draw_enter: the campaign has no draw')
end
if #ARGV[2] ~= 64 or string.find(ARGV[2], '[^0-9a-f]') then
  return redis.error_reply('ERR hongbao: coupon_draw_enter: a ticket is 64 lowercase hex digits')
end
local member = ARGV[2] .. ':' .. ARGV[1]
if meta[3] then
  local rank = redis.call('ZRANK', KEYS[2], member)
  if rank and rank < tonumber(meta[4]) then
    return 'winner'
  end
  return 'not_drawn'
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if now >= tonumber(meta[2]) then
  return 'draw_due:' .. meta[2]
end
if now < tonumber(meta[1]) then
  local wait = rl_take(KEYS[3], tonumber(ARGV[3]), ARGV[4])
  if wait > 0 then
    return 'rate_limited:' .. wait
  end
  return 'not_started:' .. meta[1] .. ':' .. now
end

-- The one write: the entry (or a repeat's count).
if redis.call('ZADD', KEYS[2], 'NX', 0, member) == 0 then
  local wait = rl_take(KEYS[3], tonumber(ARGV[3]), ARGV[4])
  if wait > 0 then
    return 'rate_limited:' .. wait
  end
end
return 'entered:' .. meta[2]
