-- rate_limit.lua: the per-user rate limit of grab.lua and vote.lua (prepended to both by
-- shared/src/store/scripts.rs).
--
-- A fixed-window counter, the pattern of the Redis INCR documentation ("Pattern: Rate
-- limiter"): `limit` accepted attempts per window of `window_ms`, the window opening at a
-- user's first attempt after the previous one closed. The state is one integer per user, the
-- number of accepted attempts in the open window, in a string key whose TTL is the rest of
-- the window (Redis expires it when the window closes; no clock is read). An accepted attempt
-- costs GET + INCR (GET + SET ... PX when it opens a window); a refused one GET + PTTL and
-- writes nothing; `Retry-After` is the rest of the window. A GCRA (as in redis-cell) would
-- smooth the known fixed-window edge (up to 2 x limit attempts around a window boundary, never
-- more than limit in one window) but needs TIME, GET and SET ... PX on every attempt: a clock
-- read and a key write with a TTL, which costs Redis about twice an INCR on the hottest path.
--
-- rl_take(key, limit, window_ms) returns wait_ms: 0 when the attempt is accepted (and
-- counted), else the whole milliseconds (>= 1) until the window closes. limit 0 turns the
-- limit off (nothing read or written). Three commands on every path: GET, then INCR, SET ... PX
-- (opening a window) or PTTL (refused).
local function rl_take(key, limit, window_ms)
  if limit <= 0 then
    return 0
  end
  local used = redis.call('GET', key)
  if used then
    if tonumber(used) >= limit then
      local left = redis.call('PTTL', key)
      if left < 0 then
        -- A counter without a TTL (it can only come from outside the scripts) would refuse
        -- forever: close its window after one more.
        redis.call('PEXPIRE', key, window_ms)
        left = window_ms
      end
      return math.max(1, left)
    end
    redis.call('INCR', key)
    return 0
  end
  redis.call('SET', key, 1, 'PX', window_ms)
  return 0
end

