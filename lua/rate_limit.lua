-- rate_limit.lua: the per-user rate limit of grab.lua and vote.lua (prepended to both by
-- shared/src/store/scripts.rs).
--
-- A fixed-window counter, the pattern of the Redis INCR documentation ("Pattern: Rate
-- limiter"): `limit` accepted attempts per window of `window_ms`, the window opening at a
-- user's first attempt after the previous one closed. The state is one integer per user, the
-- number of accepted attempts in the open window, in a string key whose TTL is the rest of
-- the window (Redis expires it when the window closes; no clock is read). An accepted attempt
-- costs GET + INCR (SET ... PX when it opens a window); a refused one GET + PTTL and writes
-- nothing; `Retry-After` is the rest of the window. This costs less than a GCRA (TIME, GET,
-- SET ... PX: one clock read and a key write with a TTL per attempt; measured by
-- `make bench`, script_costs) at the price of the known fixed-window edge: up to 2 x limit
-- attempts can pass around a window boundary, never more than limit in one window.
--
-- rl_take(key, limit, window_ms, opened_at) returns wait_ms: 0 when the attempt is accepted
-- (and counted), else the whole milliseconds (>= 1) until the window closes. limit 0 turns
-- the limit off (nothing read or written). opened_at is nil, or a text ending in the Unix ms
-- of one earlier attempt that was not counted (grab.lua passes the share record, which ends
-- in the win's grabbed_at): when no counter exists, that attempt's window, if still open, is
-- the one this attempt joins, as its second. It is parsed, and Redis TIME read, only then
-- (no closure: a Lua closure per call costs the server about 0.5 us).
local function rl_take(key, limit, window_ms, opened_at)
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
  local attempts, left = 0, 0
  if opened_at then
    local t = redis.call('TIME')
    local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    attempts = 1
    left = tonumber(string.match(opened_at, '(%d+)$')) + window_ms - now
  end
  if left <= 0 then
    attempts, left = 0, window_ms
  end
  if attempts >= limit then
    return math.max(1, left)
  end
  redis.call('SET', key, attempts + 1, 'PX', left)
  return 0
end
