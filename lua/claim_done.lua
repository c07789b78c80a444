-- claim_done.lua: step 3 of a claim: mark a pending claim done after its wallet credit landed.
-- KEYS[1] claims: claims hash (user -> state)
-- ARGV[1] user_id: the claiming grabber
-- ARGV[2] mark: '' for a claim call, 'redriven' when reclaim-cron completes a claim left
--         pending when its window closed (the state becomes "done:<claimed_at_ms>:redriven",
--         which support look-ups show)
-- Returns 1 if the state changed, 0 if it was already done (or absent): a re-sent call
-- answers 0 and changes nothing.
local state = redis.call('HGET', KEYS[1], ARGV[1])
if state and string.sub(state, 1, 8) == 'pending:' then
  local done = 'done:' .. string.sub(state, 9)
  if ARGV[2] == 'redriven' then
    done = done .. ':redriven'
  end
  redis.call('HSET', KEYS[1], ARGV[1], done)
  return 1
end
return 0
