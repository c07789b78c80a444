-- quota.lua: per-user quotas of create_packet.lua, order_code.lua and article_post.lua
-- (prepended to each by shared/src/store/scripts/mod.rs). The same fixed-window counter as
-- rate_limit.lua, split in two so a script can check before its first write and count only
-- once it succeeds. (A separate file from rate_limit.lua: every local function a script defines
-- is a closure created on each call, about 0.5 us, and grab.lua and vote.lua need only rl_take.)
--
-- The check reads, the count writes, and a script counts only once its own checks have
-- passed, so a refused or failed request writes nothing.
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
