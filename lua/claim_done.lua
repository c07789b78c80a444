-- claim_done.lua: step 3 of a claim: mark a pending claim done after its wallet credit landed.
-- KEYS[1] claims: claims hash (user -> state)
-- ARGV[1] user_id: the claiming grabber
-- Returns 1 if the state changed, 0 if it was already done (or absent).
local state = redis.call('HGET', KEYS[1], ARGV[1])
if state and string.sub(state, 1, 8) == 'pending:' then
  redis.call('HSET', KEYS[1], ARGV[1], 'done:' .. string.sub(state, 9))
  return 1
end
return 0
