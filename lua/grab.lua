-- grab.lua: give the caller at most one share of a red packet, in one round trip.
--
-- KEYS[1] packet meta hash   KEYS[2] share list   KEYS[3] grabs hash (user -> share record)
-- KEYS[4] grab order list (user ids, first grab first)
-- KEYS[5] rate-limit log of this user on this packet (sorted set of attempt times, ms)
-- ARGV[1] user id   ARGV[2] attempts allowed per window (0 = unlimited)   ARGV[3] window (ms)
--
-- A share record is "<share_id>:<amount_cents>:<grabbed_at_ms>"; share ids count from 1.
-- Returns one of:
--   {'not_found'}
--   {'rate_limited', retry_after_ms}
--   {'already_grabbed', record}   the caller's one share, however often they ask
--   {'expired'}                   Redis TIME is at or past expires_at, or the packet is settled
--   {'sold_out'}
--   {'grabbed', record, expires_at_ms}
local status = redis.call('HGET', KEYS[1], 'status')
if not status then
  return {'not_found'}
end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

-- Sliding-window log: at most ARGV[2] attempts in any ARGV[3] ms.
local limit = tonumber(ARGV[2])
if limit > 0 then
  local window = tonumber(ARGV[3])
  redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', now - window)
  if redis.call('ZCARD', KEYS[5]) >= limit then
    local oldest = redis.call('ZRANGE', KEYS[5], 0, 0, 'WITHSCORES')
    return {'rate_limited', tonumber(oldest[2]) + window - now}
  end
  -- Scripts run one at a time, so the microsecond clock makes a unique member.
  redis.call('ZADD', KEYS[5], now, t[1] .. t[2])
  redis.call('PEXPIRE', KEYS[5], window)
end

local mine = redis.call('HGET', KEYS[3], ARGV[1])
if mine then
  return {'already_grabbed', mine}
end

local expires_at = tonumber(redis.call('HGET', KEYS[1], 'expires_at'))
if status == 'settled' or now >= expires_at then
  return {'expired'}
end

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
