-- coupon_add_codes.lua: step 4 of a batch of uploaded codes (see
-- shared/src/store/coupons/add_codes.rs): this pool's share of the batch, once per batch
-- reference, and only before the campaign's start. The pool's outcome for the batch is
-- recorded before it is answered, first run wins: 'landed' (its share is in the pool) or
-- 'missed' (the start, by this script's Redis TIME, or the close came first: nothing pushed,
-- ever; the function then releases the share's directory claims). Every pool records every
-- batch, also a pool that gets none of its codes. So codes enter a pool only before the start,
-- and after it a pool only shrinks.
--
-- acknowledged: WAIT for REDIS_WAIT_REPLICAS replicas before the answer
-- redis users: app
-- KEYS[1] pool: the pool's hash (see coupon_create_pool.lua)
-- KEYS[2] codes: the pool's un-issued uploaded codes (list)
-- KEYS[3] batches: the pool's batches: batch reference -> "<fingerprint>" (landed) or
--         "<fingerprint> missed"
-- ARGV[1] reference: the batch's reference (the merchant's idempotency key)
-- ARGV[2] fingerprint: the batch's fingerprint ('v1:' + SHA-256 hex of its codes)
-- ARGV[3..] batch (&[&str]): the pool's codes of the batch (none when it gets none)
--
-- Returns:
--   'added:<total>'     the share is the pool's now (total: the pool's codes since creation)
--   'repeat:<total>'    the share landed at an earlier run; nothing written
--   'missed:<total>'    the share was not pushed and never will be (now or at an earlier run)
--   'reference_reused'  the reference names another batch; nothing written
--   'not_found'         no such pool
--   'generated'         the campaign generates its codes; nothing written
local meta = redis.call('HMGET', KEYS[1], 'kind', 'total', 'starts_at', 'closed')
if not meta[1] then
  return 'not_found'
end
if meta[1] ~= 'uploaded' then
  return 'generated'
end
local known = redis.call('HGET', KEYS[3], ARGV[1])
if known then
  local fingerprint, missed = string.match(known, '^(%S+)( ?%a*)$')
  if fingerprint ~= ARGV[2] then
    return 'reference_reused'
  end
  if missed == ' missed' then
    return 'missed:' .. meta[2]
  end
  return 'repeat:' .. meta[2]
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if meta[4] or now >= tonumber(meta[3]) then
  redis.call('HSET', KEYS[3], ARGV[1], ARGV[2] .. ' missed')
  return 'missed:' .. meta[2]
end
local slice = {}
for i = 3, #ARGV do
  slice[#slice + 1] = ARGV[i]
  if #slice == 4000 or i == #ARGV then
    redis.call('RPUSH', KEYS[2], unpack(slice))
    slice = {}
  end
end
redis.call('HSET', KEYS[3], ARGV[1], ARGV[2])
local total = redis.call('HINCRBY', KEYS[1], 'total', #ARGV - 2)
return 'added:' .. total
