-- order_code.lua: take `count` consecutive positions of the business day's order-code
-- sequence, all or none, deciding the business day from Redis TIME in the same atomic step.
--
-- The caller turns positions into codes with the day's secret keyed permutation (see
-- shared/src/order_codes/rules/permutation.rs); this script only decides the day and hands
-- out each position of that day once. It never wraps: past the domain it answers 'exhausted'
-- and takes nothing.
--
-- A day hash has one field: its name is the day's secret (32 hex digits), its value the
-- number of positions taken (at least 1 once the hash exists). It has no TTL, so no eviction
-- policy can take it (an evicted hash would stop the day, see 'lost'); the caller deletes the
-- hashes of days before yesterday once the script answers that it started a new day. A caller
-- that remembers the secret increments that field directly (TIME + HINCRBY, the cost of an
-- INCR); a wrong or stale guess creates a new field of value `count`, which is removed again
-- at once, and the script reads the real secret.
--
-- helpers: quota.lua
-- acknowledged: WAIT for REDIS_WAIT_REPLICAS replicas before the answer
-- redis users: order-codes
-- KEYS[1..m] day_hashes (&[String]): day hashes of the candidate business days (m = 1..3, one
--            slot: tag
--            {oc})
-- KEYS[m+1] newest_day: high-water mark: the newest business day (days since 1970-01-01)
--           given a day hash
-- KEYS[m+2..2m+1] quotas (&[String]): KEYS[m+1+i] (i = 1..m) is the caller's codes taken on the
--                 business
--                 day of KEYS[i] (a counter of quota.lua, prepended, living ARGV[4] seconds)
-- ARGV[1] count (u32): codes to take (1..100)
-- ARGV[2] positions_per_day (u64): positions per day (9 * 10^(digits - 1))
-- ARGV[3] new_secret: a fresh CSPRNG secret from the caller, used only if the day has none yet
-- ARGV[4] quota_ttl_secs (u64): lifetime of a quota counter from the caller's first code of the
--         day, seconds
-- ARGV[5] per_user_per_day (u32): codes one caller may take per business day (0: no quota)
-- ARGV[6] window_start (i64): the start of the window [start, end) (Unix seconds) the zone data
--         below is valid for
-- ARGV[7] window_end (i64): its end (Unix seconds)
-- ARGV[8..7+2m] days (&[(i64, &str)]): m pairs: ARGV[6+2i] the business day (local days since
--               1970-01-01) of
--               KEYS[i], ARGV[7+2i] the caller's guess of its secret ('' = none)
-- ARGV[8+2m] base_offset (i32): UTC offset (seconds) in force at the window start
-- ARGV[9+2m..] transitions (&[(i64, i32)]): pairs (transition instant, Unix seconds; UTC offset
--              from then on,
--              seconds), ascending
--
-- Returns one string, fields joined by ':' (a flat string: a Lua table reply costs the server
-- about 1 us more; every number is an integer far below 10^14, so Lua writes it exactly):
--   'ok:<day>:<now_s>:<first_position>:<secret>'  positions first..first+count-1 are the caller's
--   'ok:<day>:<now_s>:0:<secret>:<previous>'  the same, and this call started the day: <previous>
--                        is the business day that was the newest before ('' for none)
--   'exhausted:<day>:<now_s>:<taken>'   fewer than `count` positions left; none taken
--   'quota:<day>:<now_s>:<used>'  the caller's codes of the day plus `count` pass ARGV[5];
--                        nothing written
--   'clock:<now_s>'      Redis TIME is outside the window or its day is not a candidate (the
--                        caller's clock is far from Redis's); nothing written
--   'lost:<day>'         the day's hash is missing although this or a later day already had
--                        one (evicted, deleted, or the Redis clock went back): restarting the
--                        day would repeat codes, so nothing is written
local t = redis.call('TIME')
local now = tonumber(t[1])

local m = (#KEYS - 1) / 2
local count = tonumber(ARGV[1])
local domain = tonumber(ARGV[2])
if now < tonumber(ARGV[6]) or now >= tonumber(ARGV[7]) then
  return 'clock:' .. now
end

-- The UTC offset at `now`: the last transition at or before it wins.
local offset = tonumber(ARGV[8 + 2 * m])
for i = 9 + 2 * m, #ARGV - 1, 2 do
  if now >= tonumber(ARGV[i]) then
    offset = tonumber(ARGV[i + 1])
  end
end
local day = math.floor((now + offset) / 86400)

local key, guess, quota_key = nil, '', nil
for i = 1, m do
  if tonumber(ARGV[6 + 2 * i]) == day then
    key, guess, quota_key = KEYS[i], ARGV[7 + 2 * i], KEYS[m + 1 + i]
  end
end
if not key then
  return 'clock:' .. now
end

-- The caller's quota of the day, checked before any write and counted with the positions.
local quota, quota_ms = tonumber(ARGV[5]), tonumber(ARGV[4]) * 1000
local wait, used = rl_check(quota_key, quota, count, quota_ms)
if wait > 0 then
  return 'quota:' .. day .. ':' .. now .. ':' .. used
end

-- Takes `count` positions under `secret` (after = the field's value once incremented), or
-- none when fewer are left. (Written out twice, not as a local function: a closure per call
-- costs the server about 0.5 us.)
local secret
if guess ~= '' then
  local after = redis.call('HINCRBY', key, guess, count)
  if after > count then
    if after > domain then
      redis.call('HINCRBY', key, guess, -count)
      return 'exhausted:' .. day .. ':' .. now .. ':' .. (after - count)
    end
    rl_count(quota_key, quota, used, count, quota_ms)
    return 'ok:' .. day .. ':' .. now .. ':' .. (after - count) .. ':' .. guess
  end
  -- The field did not exist: a wrong guess. Undo (an emptied hash disappears).
  redis.call('HDEL', key, guess)
end

secret = redis.call('HKEYS', key)[1]
if secret then
  local after = redis.call('HINCRBY', key, secret, count)
  if after > domain then
    redis.call('HINCRBY', key, secret, -count)
    return 'exhausted:' .. day .. ':' .. now .. ':' .. (after - count)
  end
  rl_count(quota_key, quota, used, count, quota_ms)
  return 'ok:' .. day .. ':' .. now .. ':' .. (after - count) .. ':' .. secret
end

-- First request of the day: the first caller's secret wins, every later one reads it.
local newest = tonumber(redis.call('GET', KEYS[m + 1]))
if newest and day <= newest then
  return 'lost:' .. day
end
secret = ARGV[3]
redis.call('HSET', key, secret, count)
redis.call('SET', KEYS[m + 1], day)
rl_count(quota_key, quota, used, count, quota_ms)
return 'ok:' .. day .. ':' .. now .. ':0:' .. secret .. ':' .. (newest or '')
