-- claim_done.lua: step 3 of a claim: mark a pending claim done after its wallet credit landed.
-- acknowledged: WAIT for REDIS_WAIT_REPLICAS replicas before the answer
-- redis users: app
-- KEYS[1] claims: claims hash (user -> state)
-- KEYS[2] grabs: grabs hash (user -> share record; read for a merchant packet's share)
-- KEYS[3] books: a merchant packet's merchant hash (its books, on the packet's hash slot: the
--         packet id carries the merchant's tag); for a user's packet any key of the packet's
--         slot, never written
-- ARGV[1] user_id: the claiming grabber
-- ARGV[2] mark: '' for a claim call, 'redriven' when reclaim-cron completes a claim left
--         pending when its window closed (the state becomes "done:<claimed_at_ms>:redriven",
--         which support look-ups show)
-- ARGV[3] merchant_id: a merchant packet's merchant (claim.lua's answer), '' for a user's
--         packet
-- A merchant packet's share moves from the books' `reserved` to `paid_cash` in the same step
-- as the state, so it moves once, and the books close before and after it.
-- Returns the claim's state after this call: "done:<claimed_at_ms>" (":redriven" when
-- reclaim-cron completed it), whoever marked it, or '' when the user has no claim. A done state
-- never changes again, so a re-sent call, at any later moment, answers as its first run did and
-- changes nothing.
local state = redis.call('HGET', KEYS[1], ARGV[1])
if state and string.sub(state, 1, 8) == 'pending:' then
  local amount = nil
  if ARGV[3] ~= '' then
    local share = redis.call('HGET', KEYS[2], ARGV[1])
    amount = share and tonumber(string.match(share, '^%d+:(%d+):'))
    if not amount then
      return redis.error_reply('ERR hongbao: claim_done: pending claim without a share record')
    end
  end
  local done = 'done:' .. string.sub(state, 9)
  if ARGV[2] == 'redriven' then
    done = done .. ':redriven'
  end
  redis.call('HSET', KEYS[1], ARGV[1], done)
  if amount then
    redis.call('HINCRBY', KEYS[3], 'reserved', string.format('%d', -amount))
    redis.call('HINCRBY', KEYS[3], 'paid_cash', string.format('%d', amount))
  end
  return done
end
return state or ''
