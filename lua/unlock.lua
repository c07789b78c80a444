-- unlock.lua: release a lock only if the caller still owns it (compare-and-delete).
-- redis users: app ledger-export
-- KEYS[1] lock: lock key
-- ARGV[1] token: the owner's random token
-- Returns 1 if released, 0 if the lock had expired or belongs to someone else.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
