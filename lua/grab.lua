-- grab.lua: give the caller at most one share of a red packet, in one round trip.
-- (lua/rate_limit.lua is prepended: rl_check, rl_record.)
--
-- KEYS[1] packet meta hash   KEYS[2] share list   KEYS[3] grabs hash (user -> share record)
-- KEYS[4] grab order list (user ids, first grab first)
-- KEYS[5] rate-limit state of this user on this packet (GCRA: TAT, Unix us; see rate_limit.lua)
-- ARGV[1] user id   ARGV[2] attempts allowed per window (0 = unlimited)   ARGV[3] window (ms)
--
-- A share record is "<share_id>:<amount_cents>:<grabbed_at_ms>"; share ids count from 1.
-- Returns one of:
--   {'not_found'}
--   {'rate_limited', retry_after_ms}
--   {'already_grabbed', record}   the caller's one share, however often they ask
--   {'expired'}                   Redis TIME is at or past expires_at, or the packet is settled
--   {'sold_out'}                  every share is grabbed
--   {'grabbed', record, expires_at_ms}
--
-- The paths a flash crowd takes are short: a repeat is HGET, TIME, GET (+ SET); a loser of a
-- sold-out packet is HGET, HMGET, TIME. Repeats and wins count toward the rate limit; an
-- unknown, expired or sold-out packet is answered before it.
local mine = redis.call('HGET', KEYS[3], ARGV[1])
local limit, window = tonumber(ARGV[2]), tonumber(ARGV[3])
local t, now_us, new_tat
if mine then
  t = redis.call('TIME')
  now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local wait
  wait, new_tat = rl_check(KEYS[5], limit, window, now_us)
  if wait > 0 then
    return {'rate_limited', wait}
  end
  rl_record(KEYS[5], new_tat, now_us)
  return {'already_grabbed', mine}
end

local meta = redis.call('HMGET', KEYS[1], 'status', 'expires_at', 'grabbed_count', 'count')
local status = meta[1]
if not status then
  return {'not_found'}
end
t = redis.call('TIME')
now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local now = math.floor(now_us / 1000)
local expires_at = tonumber(meta[2])
if status == 'settled' or now >= expires_at then
  return {'expired'}
end
if tonumber(meta[3]) >= tonumber(meta[4]) then
  return {'sold_out'}
end

local wait
wait, new_tat = rl_check(KEYS[5], limit, window, now_us)
if wait > 0 then
  return {'rate_limited', wait}
end
rl_record(KEYS[5], new_tat, now_us)

local amount = redis.call('LPOP', KEYS[2])
if not amount then
  return {'sold_out'}
end

local share_id = redis.call('HINCRBY', KEYS[1], 'grabbed_count', 1)
redis.call('HINCRBY', KEYS[1], 'grabbed_cents', amount)
local record = string.format('%d:%s:%d', share_id, amount, now)
redis.call('HSET', KEYS[3], ARGV[1], record)
redis.call('RPUSH', KEYS[4], ARGV[1])
return {'grabbed', record, expires_at}
