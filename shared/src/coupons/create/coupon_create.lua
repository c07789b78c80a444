-- coupon_create.lua: record a new coupon campaign under the merchant's reference, once, and give
-- it the next campaign number; its pools are written after this (coupon_create_pool.lua, see
-- shared/src/store/coupons/create.rs).
--
-- acknowledged: WAIT for REDIS_WAIT_REPLICAS replicas before the answer
-- redis users: app
-- KEYS[1] refs: the campaigns by reference (hash): reference ->
--         "<campaign_no>\n<fingerprint>\n<starts_at_ms>\n<secret>"; no TTL
-- KEYS[2] seq: the last campaign number given (string)
-- KEYS[3] ends: the campaigns to close, by end (sorted set: campaign number, score ends_at_ms),
--         which reclaim-cron closes (coupon_close.lua)
-- KEYS[4] merchant: the merchant's campaigns, newest first by score (sorted set: member and
--         score the campaign number; no TTL), which GET /campaigns reads; written only when
--         merchant_id is given, once, by the run that records the campaign
-- ARGV[1] reference: the merchant's reference of the creation (printable ASCII, no spaces)
-- ARGV[2] fingerprint: the request's fingerprint ('v1:' + SHA-256 hex)
-- ARGV[3] starts_at_ms: when grabbing opens, Unix ms; '' = now (Redis TIME)
-- ARGV[4] ends_at_ms (i64): when grabbing ends (exclusive), Unix ms
-- ARGV[5] secret: a fresh code secret (32 hex digits), stored if the campaign is new: every
--         pool of a generated campaign, and every retry of its creation, uses the stored one
-- ARGV[6] max_campaign_no (u64): the largest campaign number (32^5 - 1: five characters)
-- ARGV[7] max_campaign_ms (i64): the longest campaign, ms: ends_at - start at most this (the start
--         given or, without one, Redis TIME)
-- ARGV[8] merchant_id: the merchant the campaign is listed under (part of the fingerprint);
--         '' = none: no index written
-- ARGV[9] draw_entry_ms: a draw campaign's entry window, ms (the draw is at the start plus
--         this, and must be before ends_at); '' = no draw
--
-- Returns:
--   'created:<campaign_no>:<starts_at_ms>:<secret>'  recorded now (and listed under the
--                          merchant when one is given)
--   'repeat:<campaign_no>:<starts_at_ms>:<secret>'   the reference names this request already
--                          (a retry, or this call sent again); nothing written
--   'reference_reused'     the reference names another request; nothing written
--   'ended:<now_ms>'       ends_at is not after Redis TIME (nor after starts_at); nothing written
--   'too_long:<now_ms>'    ends_at is more than max_campaign_ms after the start; nothing written
--   'draw_after_end:<now_ms>'  a draw campaign whose draw (the start + draw_entry_ms) is not
--                          before ends_at; nothing written
--   'full'                 every campaign number is taken; nothing written
local record = redis.call('HGET', KEYS[1], ARGV[1])
if record then
  local no, fingerprint, starts, secret = string.match(record, '^(%d+)\n([^\n]*)\n(%d+)\n(%x+)$')
  if not no then
    return redis.error_reply('ERR hongbao: coupon_create: malformed record of a reference')
  end
  if fingerprint ~= ARGV[2] then
    return 'reference_reused'
  end
  return 'repeat:' .. no .. ':' .. starts .. ':' .. secret
end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local starts = ARGV[3]
if starts == '' then
  starts = string.format('%d', now)
end
if tonumber(ARGV[4]) <= now or tonumber(ARGV[4]) <= tonumber(starts) then
  return 'ended:' .. now
end
if tonumber(ARGV[4]) - tonumber(starts) > tonumber(ARGV[7]) then
  return 'too_long:' .. now
end
if ARGV[9] ~= '' and tonumber(starts) + tonumber(ARGV[9]) >= tonumber(ARGV[4]) then
  return 'draw_after_end:' .. now
end
local last = tonumber(redis.call('GET', KEYS[2]) or '0')
if last >= tonumber(ARGV[6]) then
  return 'full'
end

local no = redis.call('INCR', KEYS[2])
redis.call('HSET', KEYS[1], ARGV[1],
  string.format('%d', no) .. '\n' .. ARGV[2] .. '\n' .. starts .. '\n' .. ARGV[5])
redis.call('ZADD', KEYS[3], ARGV[4], no)
if ARGV[8] ~= '' then
  redis.call('ZADD', KEYS[4], no, no)
end
return 'created:' .. no .. ':' .. starts .. ':' .. ARGV[5]
