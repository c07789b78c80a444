-- draw_enter.lua: enter a user in a draw packet's draw (domain::draws), after grab.lua checked
-- the grab and answered the seed the caller's ticket is computed from.
-- (lua/rate_limit.lua is prepended: rl_take.)
--
-- The entrants are the tickets sorted set (lua/draw_run.lua): member "<ticket>:<user_id>" at
-- score 0. The ticket is fixed by the seed, so a user entering again adds the same member:
-- one entry per user. A repeat (or the same call re-sent) answers 'entered' again and counts
-- toward the grab rate limit, as a repeated grab does; a first entry does not. Entries close
-- at draw_at (Redis TIME) or once the draw has started (draw_winners set), whichever is
-- first: then nothing is written.
--
-- helpers: rate_limit.lua
-- acknowledged: WAIT for REDIS_WAIT_REPLICAS replicas before the answer
-- redis users: app
-- KEYS[1] meta: packet meta hash
-- KEYS[2] tickets: the packet's entrants (sorted set, see above)
-- KEYS[3] rate: rate-limit counter of this user on this packet (see rate_limit.lua)
-- ARGV[1] user_id: the entrant
-- ARGV[2] ticket: the entrant's ticket, 64 lowercase hex digits (domain::draws::ticket)
-- ARGV[3] rate_limit (u32): attempts allowed per window (0 = unlimited)
-- ARGV[4] rate_window_ms (u64): the window, ms
-- Returns one string:
--   'not_found'
--   'cancelled'                   the sender cancelled the packet (settled since or not);
--                                 nothing written
--   'draw_due:<draw_at_ms>'       entries have closed: run the draw, then grab again;
--                                 nothing written
--   'rate_limited:<retry_after_ms>'  a repeat over the grab rate limit
--   'entered:<draw_at_ms>'        the user is an entrant (now or before; also once entries
--                                 closed or the packet was cancelled, for an entrant)
local meta = redis.call('HMGET', KEYS[1], 'status', 'draw_at', 'draw_winners', 'cancelled_at')
if not meta[1] then
  return 'not_found'
end
if not meta[2] then
  return redis.error_reply('ERR hongbao: draw_enter: the packet has no draw')
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local cancelled = meta[1] == 'cancelled' or meta[4]
local closed = meta[3] or meta[1] == 'settled' or now >= tonumber(meta[2])
-- An entry is the entrant's one outcome: their call sent again once entries closed or the
-- packet was cancelled (a lost reply re-sent late) answers it, writing nothing.
if (cancelled or closed) and redis.call('ZSCORE', KEYS[2], ARGV[2] .. ':' .. ARGV[1]) then
  return 'entered:' .. meta[2]
end
-- Cancelled, also once settled since (settle.lua keeps cancelled_at): never entered again.
if cancelled then
  return 'cancelled'
end
if closed then
  return 'draw_due:' .. meta[2]
end
if #ARGV[2] ~= 64 or string.find(ARGV[2], '[^0-9a-f]') then
  return redis.error_reply('ERR hongbao: draw_enter: a ticket is 64 lowercase hex digits')
end

-- The one write: the entry (or a repeat's count).
if redis.call('ZADD', KEYS[2], 'NX', 0, ARGV[2] .. ':' .. ARGV[1]) == 0 then
  local wait = rl_take(KEYS[3], tonumber(ARGV[3]), ARGV[4])
  if wait > 0 then
    return 'rate_limited:' .. wait
  end
end
return 'entered:' .. meta[2]
