-- coupon_directory_remove.lua: release an uploaded code's directory claim, if it is the given owner's:
-- a creation or batch whose claims were refused, or a batch's share that missed its pool (the
-- campaign started first), frees its codes for any campaign. Another owner's claim is left as
-- it is, so a run sent again after another campaign took the code changes nothing. See
-- shared/src/store/coupons/directory.rs.
--
-- acknowledged: WAIT for REDIS_WAIT_REPLICAS replicas before the answer
-- redis users: app
-- KEYS[1] directory: the directory hash of the code's digest tag (code -> owner)
-- ARGV[1] code: the code
-- ARGV[2] owner: the owner whose claim is released
--
-- Returns 1 when the claim was this owner's and is released now, 0 otherwise.
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then
  redis.call('HDEL', KEYS[1], ARGV[1])
  return 1
end
return 0
