-- rate_limit.lua: the per-user rate limit of grab.lua and vote.lua (prepended to both by
-- shared/src/store/scripts/mod.rs).
--
-- A fixed-window counter, the pattern of the Redis INCR documentation ("Pattern: Rate
-- limiter"): `limit` accepted attempts per window of `window_ms`, the window opening at a
-- user's first attempt after the previous one closed. The state is one integer per user, the
-- number of accepted attempts in the open window, in a string key whose TTL is the rest of
-- the window (Redis expires it when the window closes; no clock is read). `Retry-After` is the
-- rest of the window. A GCRA (as in redis-cell) would smooth the known fixed-window edge (up
-- to 2 x limit attempts around a window boundary, never more than limit in one window) but
-- needs TIME, GET and SET ... PX on every attempt: a clock read and a key write with a TTL,
-- which costs Redis about twice an INCR on the hottest path.
--
-- The counter is taken first and handed back when over the limit: INCR (+ PEXPIRE when it
-- opened a window); refused: INCR, DECR, PTTL. So an accepted attempt costs one command (two
-- when it opens a window, against GET + SET ... PX before: 15 k instead of 23 k instructions
-- of redis-server 7.0 for a new user, callgrind), and a refused one leaves the counter, its
-- TTL and every other key exactly as they were. The INCR is this script's first write, and
-- Redis refuses a script's write for maxmemory only before its first write, so the DECR
-- cannot be refused: the hand-back is as atomic as the rest of the script.
--
-- rl_take(key, limit, window_ms) returns wait_ms: 0 when the attempt is accepted (and
-- counted), else the whole milliseconds (>= 1) until the window closes. limit 0 turns the
-- limit off (nothing read or written). window_ms may be the ARGV string itself: passed to
-- PEXPIRE as it is, it costs no number formatting (Lua formats a number argument of
-- redis.call with "%.14g", a few hundred ns).
local function rl_take(key, limit, window_ms)
  if limit <= 0 then
    return 0
  end
  local used = redis.call('INCR', key)
  if used == 1 then
    redis.call('PEXPIRE', key, window_ms)
    return 0
  end
  if used <= limit then
    return 0
  end
  redis.call('DECR', key)
  local left = redis.call('PTTL', key)
  if left < 0 then
    -- A counter without a TTL (it can only come from outside the scripts) would refuse
    -- forever: close its window after one more.
    redis.call('PEXPIRE', key, window_ms)
    left = tonumber(window_ms)
  end
  return math.max(1, left)
end
