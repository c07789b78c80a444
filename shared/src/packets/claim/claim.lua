-- claim.lua: step 1 of a claim, on the packet's hash slot: reserve the caller's share for
-- their wallet. Step 2 (wallet_credit.lua, on the grabber's slot) credits it exactly once,
-- keyed by the transfer id "claim:<packet_id>"; step 3 (claim_done.lua) marks it done here.
-- A crash between the steps leaves the claim "pending"; the next claim call or reclaim-cron
-- re-drives steps 2 and 3, which are idempotent.
--
-- A merchant packet paid out as coupons (meta `redeem_by`) has no step 2: its whole claim is
-- this one step on the merchant's slot. The share becomes a coupon of the grabber (the
-- packet's coupons hash: share id -> the issued record of coupon_record.lua), its cents move
-- from the merchant's `reserved` to `outstanding`, the packet's `coupon_open_cents` grows by
-- them, a coupon_issued entry is journaled, and the state is "done" at once.
-- Prepended with records.lua (int, now_ms) and journal.lua (journal_add).
--
-- A share is claimed once, until the packet's expires_at (Redis TIME, ms): at or after it, or
-- once the packet is settled, the answer is 'expired'. This script runs on the slot of the
-- settlement (settle.lua), so a claim racing the refund at the deadline is serialised with it:
-- the claim first and a refund smaller by the share, or the refund first and 'expired'.
--
-- helpers: records.lua journal.lua
-- acknowledged: WAIT for REDIS_WAIT_REPLICAS replicas before the answer
-- redis users: app
-- KEYS[1] meta: packet meta hash
-- KEYS[2] grabs: grabs hash (user -> share record)
-- KEYS[3] claims: claims hash (user -> state)
-- KEYS[4] coupons: a coupon packet's coupons hash (share id -> coupon record); for any other
--         packet any key of the packet's slot, never written
-- KEYS[5] books: a coupon packet's merchant hash (its books, on the packet's slot: the
--         packet id carries the merchant's tag); else any key of the slot, never written
-- KEYS[6] journal: the money journal of the packet's tag (a coupon packet's coupon_issued)
-- ARGV[1] user_id: the claiming grabber
-- ARGV[2] books_of: the merchant whose books KEYS[5] is, '' when the caller does not know
--         the packet's merchant (a coupon packet's claim then answers {'books', merchant_id},
--         writing nothing, and is sent again with that merchant's books)
-- ARGV[3] call: this call's id (16 hex digits): a coupon packet's claim keeps it in the state
--         it writes, so its re-run, at any later moment, answers issued '1' as its first run
-- A claim state is "pending:<claimed_at_ms>", "done:<claimed_at_ms>" or, completed by
-- reclaim-cron after the window closed, "done:<claimed_at_ms>:redriven"; a coupon packet's
-- claim "done:<claimed_at_ms>:<call>" (the call that issued the coupon).
-- Returns one of:
--   {'not_found'} | {'no_share'} | {'expired'} | {'books', merchant_id}
--   {'claimed', share_record, state, sender_id, merchant_id, redeem_by, min_order, issued}
--        the state after this call (new or earlier claim); the sender names the history
--        entry (a merchant packet's: its sharer); merchant_id is '' for a user's packet, else
--        the merchant whose books claim_done.lua moves the share in; redeem_by (Unix ms) and
--        min_order (cents, '' for any order) are a coupon packet's coupon's terms, both ''
--        for a packet paid into wallets; issued is '1' when this call issued the coupon
--        (this run, or its first run when this is a re-run of the same call), else ''
local meta = redis.call('HMGET', KEYS[1], 'status', 'sender_id', 'expires_at', 'merchant_id',
  'sharer_id', 'redeem_by', 'min_order', 'packet_id')
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
local redeem_by = meta[6] or ''
local min_order = meta[7] or ''
if state then
  local issuer = string.match(state, '^done:%d+:(%x+)$')
  local issued = ''
  if issuer and issuer == ARGV[3] then
    issued = '1'
  end
  return {'claimed', share, state, sender, merchant, redeem_by, min_order, issued}
end

local now = now_ms()
local expires_at = tonumber(meta[3])
-- Settled or expired: refused (serialised with the refund, see the header).
if status == 'settled' or now >= expires_at then
  return {'expired'}
end

local share_id, amount = string.match(share, '^(%d+):(%d+):')
amount = tonumber(amount)
if redeem_by ~= '' then
  if merchant == '' or not meta[8] then
    return redis.error_reply('ERR hongbao: claim: coupon packet without its merchant or id')
  end
  if ARGV[2] ~= merchant then
    return {'books', merchant}
  end
  -- Writes start here: the share becomes the grabber's coupon.
  if not string.match(ARGV[3], '^%x+$') then
    return redis.error_reply('ERR hongbao: claim: a coupon claim needs its call id')
  end
  state = 'done:' .. int(now) .. ':' .. ARGV[3]
  redis.call('HSET', KEYS[3], ARGV[1], state)
  redis.call('HINCRBY', KEYS[1], 'claimed_cents', int(amount))
  redis.call('HINCRBY', KEYS[1], 'coupon_open_cents', int(amount))
  redis.call('HSET', KEYS[4], share_id, ARGV[1] .. '\n' .. int(now))
  redis.call('HINCRBY', KEYS[5], 'reserved', int(-amount))
  redis.call('HINCRBY', KEYS[5], 'outstanding', int(amount))
  journal_add(KEYS[6], 'coupon_issued', ARGV[1], 0, meta[8] .. '/' .. share_id, now, 0,
    merchant .. '|' .. int(amount))
  return {'claimed', share, state, sender, merchant, redeem_by, min_order, '1'}
end
state = 'pending:' .. int(now)
redis.call('HSET', KEYS[3], ARGV[1], state)
redis.call('HINCRBY', KEYS[1], 'claimed_cents', amount)
return {'claimed', share, state, sender, merchant, redeem_by, min_order, ''}
