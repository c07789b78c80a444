-- rate_limit.lua: the per-user rate limit of grab.lua and vote.lua (prepended to both by
-- shared/src/store/scripts.rs).
--
-- GCRA, the generic cell rate algorithm (ITU-T I.371 / ATM Forum TM 4.0; as in redis-cell and
-- Brandur Leach, "Rate limiting, cells, and GCRA"): `limit` attempts per `window` ms means one
-- attempt every window / limit ms on average with bursts of up to `limit`. The state is one
-- integer per user, the theoretical arrival time (TAT) of the next attempt in Unix
-- microseconds, in a string key that expires when it no longer matters. An attempt at `now`
-- is allowed when max(TAT, now) + window / limit - window <= now; then
-- TAT := max(TAT, now) + window / limit. So `limit` quick attempts pass, the next waits
-- window / limit, and a user idle for a whole window starts afresh. A refused attempt writes
-- nothing.
--
-- rl_check(key, limit, window_ms, now_us) returns (wait_ms, new_tat_us): wait_ms 0 when the
-- attempt is allowed (then rl_record(key, new_tat_us, now_us) stores it), else the whole
-- milliseconds (>= 1) until an attempt will be. limit 0 turns the limit off (wait 0, nothing
-- stored). Every number is an integer (microseconds), exact far beyond 2^53 / 10^6 seconds.
local function rl_check(key, limit, window_ms, now_us)
  if limit <= 0 then
    return 0, nil
  end
  local window_us = window_ms * 1000
  local interval_us = math.floor(window_us / limit)
  local tat = tonumber(redis.call('GET', key)) or now_us
  if tat < now_us then
    tat = now_us
  end
  local new_tat = tat + interval_us
  local wait_us = new_tat - window_us - now_us
  if wait_us > 0 then
    return math.max(1, math.ceil(wait_us / 1000)), nil
  end
  return 0, new_tat
end

local function rl_record(key, new_tat_us, now_us)
  if new_tat_us then
    redis.call('SET', key, string.format('%d', new_tat_us),
      'PX', math.max(1, math.ceil((new_tat_us - now_us) / 1000)))
  end
end

