-- coupon_add_codes.lua: add one pool's share of a batch of uploaded codes to a campaign, once
-- per batch reference. A batch is one call per pool (each records the reference, also a pool
-- that gets none of the codes), see shared/src/store/coupons/add_codes.rs.
--
-- KEYS[1] pool: the pool's hash (see coupon_create_pool.lua)
-- KEYS[2] codes: the pool's un-issued uploaded codes (list)
-- KEYS[3] batches: the pool's batches: batch reference -> fingerprint of the batch
-- ARGV[1] reference: the batch's reference (the merchant's idempotency key)
-- ARGV[2] fingerprint: the batch's fingerprint ('v1:' + SHA-256 hex of its codes)
-- ARGV[3..] batch: the pool's codes of the batch (none when it gets none)
--
-- Returns:
--   'added:<total>'     the codes are the pool's now (total: the pool's codes since creation)
--   'repeat:<total>'    the reference was added before with the same fingerprint; nothing written
--   'reference_reused'  the reference names another batch; nothing written
--   'not_found'         no such pool
--   'generated'         the campaign generates its codes; nothing written
local meta = redis.call('HMGET', KEYS[1], 'kind', 'total')
if not meta[1] then
  return 'not_found'
end
if meta[1] ~= 'uploaded' then
  return 'generated'
end
local known = redis.call('HGET', KEYS[3], ARGV[1])
if known then
  if known == ARGV[2] then
    return 'repeat:' .. meta[2]
  end
  return 'reference_reused'
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
