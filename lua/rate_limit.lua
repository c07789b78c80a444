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

-- A quota of the same fixed-window kind for scripts that must check everything before their
-- first write (create_packet.lua, order_code.lua, article_post.lua): the check reads, the
-- count writes, and the script counts only once its own checks have passed, so a refused or
-- failed request writes nothing.
--
-- rl_check(key, limit, cost, window_ms) returns wait_ms, used: wait_ms 0 when `cost` more
-- units fit in the open window (used = the units taken so far, or nil when no window is
-- open), else the whole milliseconds (>= 1) until the window closes (nothing written).
-- limit 0 turns the quota off (nothing read). A counter without a TTL (only a program outside
-- the scripts can leave one) counts as no open window, and rl_count replaces it.
local function rl_check(key, limit, cost, window_ms)
  if limit <= 0 then
    return 0, nil
  end
  local used = redis.call('GET', key)
  if not used then
    return 0, nil
  end
  local left = redis.call('PTTL', key)
  if left < 0 then
    return 0, nil
  end
  if tonumber(used) + cost > limit then
    return math.max(1, left), used
  end
  return 0, used
end

-- rl_count(key, limit, used, cost, window_ms): counts `cost` units after a passed rl_check
-- (INCRBY in the open window, or SET ... PX opening one). Nothing when the quota is off.
local function rl_count(key, limit, used, cost, window_ms)
  if limit <= 0 then
    return
  end
  if used then
    redis.call('INCRBY', key, cost)
  else
    redis.call('SET', key, cost, 'PX', window_ms)
  end
end
