-- claim.lua: step 1 of a claim, on the packet's hash slot: reserve the caller's share for
-- their wallet. Step 2 (wallet_credit.lua, on the grabber's slot) credits it exactly once,
-- keyed by the transfer id "claim:<packet_id>"; step 3 (claim_done.lua) marks it done here.
-- A crash between the steps leaves the claim "pending"; the next claim call or reclaim-cron
-- re-drives steps 2 and 3, which are idempotent.
--
-- A share is claimed once, until the packet's expires_at (Redis TIME, ms): at or after it, or
-- once the packet is settled, the answer is 'expired'. This script runs on the slot of the
-- settlement (settle.lua), so a claim racing the refund at the deadline is serialised with it:
-- the claim first and a refund smaller by the share, or the refund first and 'expired'.
--
-- KEYS[1] meta: packet meta hash
-- KEYS[2] grabs: grabs hash (user -> share record)
-- KEYS[3] claims: claims hash (user -> state)
-- ARGV[1] user_id: the claiming grabber
-- A claim state is "pending:<claimed_at_ms>", "done:<claimed_at_ms>" or, completed by
-- reclaim-cron after the window closed, "done:<claimed_at_ms>:redriven".
-- Returns one of:
--   {'not_found'} | {'no_share'} | {'expired'}
--   {'claimed', share_record, state, sender_id, merchant_id}
--        the state after this call (new or earlier claim); the sender names the history
--        entry (a merchant packet's: its sharer); merchant_id is '' for a user's packet, else
--        the merchant whose books claim_done.lua moves the share in
local meta = redis.call('HMGET', KEYS[1], 'status', 'sender_id', 'expires_at', 'merchant_id',
  'sharer_id')
local status = meta[1]
if not status then
  return {'not_found'}
end
local share = redis.call('HGET', KEYS[2], ARGV[1])
if not share then
  return {'no_share'}
end
local state = redis.call('HGET', KEYS[3], ARGV[1])
local sender = meta[2] or meta[5]
local merchant = meta[4] or ''
if state then
  return {'claimed', share, state, sender, merchant}
end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local expires_at = tonumber(meta[3])
-- Settled or expired: refused (serialised with the refund, see the header).
if status == 'settled' or now >= expires_at then
  return {'expired'}
end

local amount = tonumber(string.match(share, '^%d+:(%d+):'))
state = 'pending:' .. string.format('%d', now)
redis.call('HSET', KEYS[3], ARGV[1], state)
redis.call('HINCRBY', KEYS[1], 'claimed_cents', amount)
return {'claimed', share, state, sender, merchant}
