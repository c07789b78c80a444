-- coupon_directory_add.lua: claim a field of a hash for a value, first writer wins, and answer the
-- value the field holds now: a run sent again after its reply was lost answers the same, so a
-- claim of this run's is never mistaken for an earlier run's, nor the other way round. Two
-- uses (shared/src/store/coupons/directory.rs, create.rs):
--   * an uploaded code in the directory (code -> owner: the campaign id for the codes of a
--     creation, "<campaign id>/<batch reference>" for those of an added batch);
--   * a creation's one outcome of its directory claims, on `{coupon}` (campaign id ->
--     'claimed', or 'refused <codes>' with the codes another campaign holds), so that no run
--     writes a pool once a run released the claims, and no run releases them once a run may
--     have written one.
--
-- acknowledged: WAIT for REDIS_WAIT_REPLICAS replicas before the answer
-- KEYS[1] claims: the hash (the directory hash of the code's digest tag, or the creations'
--         outcomes); no TTL
-- ARGV[1] field: the code, or the campaign id
-- ARGV[2] value: this run's owner or outcome
--
-- Returns the field's value after the call (ARGV[2] when this run's claim is, or was, first).
redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2])
return redis.call('HGET', KEYS[1], ARGV[1])
