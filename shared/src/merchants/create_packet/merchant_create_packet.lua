-- merchant_create_packet.lua: debit a merchant's budget and create the red packet of one of its
-- orders, atomically, once per (merchant, order) (POST /merchant-packets). Prepended with
-- records.lua (int, now_ms, prune_records, forget_score, MAX_EXACT) and journal.lua
-- (journal_add), then ledger.lua (ledger_push).
--
-- All keys share the merchant's hash tag (a merchant packet's id starts with it), so this runs
-- in one hash slot on a cluster, and so do the packet's later grabs, claims and settlement.
-- helpers: records.lua journal.lua ledger.lua packet.lua
-- acknowledged: WAIT for REDIS_WAIT_REPLICAS replicas before the answer
-- redis users: app
-- KEYS[1] merchant: the merchant's hash (its books, cents: merchants::rules::Books)
-- KEYS[2] ledger: the merchant's ledger list
-- KEYS[3] records: the merchant's records hash (here `order:<order_reference>` ->
--         "<fingerprint>\n<packet_id>")
-- KEYS[4] records_forget: its "forget after" sorted set (record id -> Unix ms)
-- KEYS[5] meta: the packet's meta hash
-- KEYS[6] shares: the packet's share list (un-grabbed amounts, cents, popped from the left)
-- KEYS[7] grabs: the packet's grabs hash (the sharer's share, when sharer_first)
-- KEYS[8] packets: the merchant's packets (sorted set: packet id -> created_at, Unix ms)
-- KEYS[9] journal: the money journal of the merchant's tag (one merchant_packet_debit entry)
-- KEYS[10] order: the packet's grab order list (the sharer, when sharer_first)
-- ARGV[1] packet_id: the new packet's id
-- ARGV[2] merchant_id: the merchant (the journal entry's user)
-- ARGV[3] order_reference: the order (one packet per merchant and order)
-- ARGV[4] sharer_id: the customer who shares the packet
-- ARGV[5] payout: 'wallet' or 'coupon'
-- ARGV[6] sharer_first: '1' when the sharer's share is taken now, else ''
-- ARGV[7] total_cents (i64): the packet's total, cents
-- ARGV[8] count (u32): the number of shares
-- ARGV[9] mode: 'lucky' or 'fixed'
-- ARGV[10] split: 'double_mean' or 'line_cut' for a lucky packet, '' for a fixed one
-- ARGV[11] greeting: the greeting, '' for none
-- ARGV[12] cover: the cover id, '' for none
-- ARGV[13] expires_in_secs (u64): the packet expires this many seconds after Redis TIME
-- ARGV[14] fingerprint: the order's fingerprint (merchants::rules::NewMerchantPacket)
-- ARGV[15] order_keep_ms (u64): how long the order's record is kept, ms (> 0: past the packet's
--          expiry and retention)
-- ARGV[16] ledger_cap (u32): ledger length cap (entries)
-- ARGV[17] indexed_at_ms (i64): Redis TIME (Unix ms) of the reclaim index's node when due_add.lua
--          indexed packet_id; nothing is created once this node's TIME is past it by ARGV[18]
--          (as in create_packet.lua: a late delivery would make a packet no refund finds)
-- ARGV[18] delivery_window_ms (i64): the delivery window, ms
-- ARGV[19] salt: the fairness receipt's salt (64 hex digits)
-- ARGV[20] commitment: SHA-256 hex of "hongbao-shares-v1:<salt>:<c1>,...,<cn>"
-- ARGV[21] index_keep_ms (u64): how long the merchant's packets index keeps an entry, ms (> 0: past
--          the longest packet's expiry and retention, so no packet that still exists leaves
--          the list)
-- ARGV[22] min_order_cents: a coupon packet's coupons' minimum order, cents, or '' (any
--          order; always '' for a wallet packet)
-- ARGV[23] redeem_within_ms: a coupon packet's coupons are redeemable until expires_at plus
--          this, ms (> 0); '' for a wallet packet
-- ARGV[24..23+count] share_amounts (&[i64]): the share amounts (cents), in share-id order
--
-- The budget's cents move from `balance` to `reserved` (the books still close); a claim moves
-- its share on to `paid_cash` (claim_done.lua) or, for a coupon packet, to `outstanding` as a
-- coupon (claim.lua), and the settlement the rest back to `balance` (settle.lua). A coupon
-- packet's meta also holds its coupons' terms, as a campaign pool's hash does (`redeem_by`,
-- `min_order`, `redeemed`), and `coupon_open_cents`, the cents of its issued coupons neither
-- redeemed nor refunded. Any call may run twice: a run that finds packet_id made for this merchant and
-- order is this call run again and answers {'created', packet_id}, writing nothing; a second
-- call for the order finds the order's record. Every check comes before the first write.
-- Returns one of:
--   {'created', packet_id, balance}        created now, or by an earlier run of this call;
--                                          the budget's balance after this run, cents
--   {'repeat', packet_id}                  the order's packet, made by the same request before
--   {'order_reference_reused', packet_id}  the order's packet was made by another request
--   {'insufficient_funds', balance}        the budget's balance is below the total
--   {'id_taken'}                           packet id belongs to another packet (draw another)
--   {'late'}                              delivered after its window: nothing changed
local SHARES_FROM = 24
local total = tonumber(ARGV[7])
local count = tonumber(ARGV[8])
local record_id = 'order:' .. ARGV[3]
local now = now_ms()

local made = redis.call('HMGET', KEYS[5], 'merchant_id', 'order_reference', 'packet_id')
if made[3] then
  if made[1] == ARGV[2] and made[2] == ARGV[3] then
    return {'created', ARGV[1], int(tonumber(redis.call('HGET', KEYS[1], 'balance') or '0'))}
  end
  return {'id_taken'}
end
if now > tonumber(ARGV[17]) + tonumber(ARGV[18]) then
  return {'late'}
end

local prev = redis.call('HGET', KEYS[3], record_id)
if prev then
  local stored, packet_id = string.match(prev, '^(.-)\n(.*)$')
  if stored ~= ARGV[14] then
    return {'order_reference_reused', packet_id}
  end
  return {'repeat', packet_id}
end

if #ARGV - SHARES_FROM + 1 ~= count then
  return redis.error_reply('ERR hongbao: merchant_create_packet: share list length does not match count')
end
local sum = 0
for i = SHARES_FROM, #ARGV do
  local amount = tonumber(ARGV[i])
  if amount == nil or amount < 1 or amount ~= math.floor(amount) then
    return redis.error_reply('ERR hongbao: merchant_create_packet: share below one cent or not an integer')
  end
  sum = sum + amount
end
if total == nil or sum ~= total or total > MAX_EXACT then
  return redis.error_reply('ERR hongbao: merchant_create_packet: shares do not sum to the total')
end
local keep_ms = tonumber(ARGV[15])
local index_keep_ms = tonumber(ARGV[21])
if keep_ms == nil or keep_ms < 1 or index_keep_ms == nil or index_keep_ms < 1 then
  return redis.error_reply('ERR hongbao: merchant_create_packet: keep times must be positive')
end
local coupon = ARGV[5] == 'coupon'
local redeem_within = tonumber(ARGV[23])
if coupon and (redeem_within == nil or redeem_within < 1) then
  return redis.error_reply('ERR hongbao: merchant_create_packet: a coupon packet needs its redeem window')
end

local balance = tonumber(redis.call('HGET', KEYS[1], 'balance') or '0')
if balance < total then
  return {'insufficient_funds', int(balance)}
end
local expires_at = now + tonumber(ARGV[13]) * 1000

-- Writes start here.
local after = redis.call('HINCRBY', KEYS[1], 'balance', int(-total))
redis.call('HINCRBY', KEYS[1], 'reserved', int(total))
ledger_push(KEYS[2], KEYS[1], 'packet_debit|' .. int(-total) .. '|' .. int(now) .. '|' .. ARGV[1],
  tonumber(ARGV[16]))
journal_add(KEYS[9], 'merchant_packet_debit', ARGV[2], -total, ARGV[1], now, after)

packet_write(KEYS[5], {
  id = ARGV[1], total = total, count = count, mode = ARGV[9], split = ARGV[10],
  greeting = ARGV[11], now = now, expires_at = expires_at, salt = ARGV[19],
  commitment = ARGV[20],
}, {
  'merchant_id', ARGV[2], 'order_reference', ARGV[3], 'sharer_id', ARGV[4], 'payout', ARGV[5],
  'cover', ARGV[12],
  'redeem_by', coupon and int(expires_at + redeem_within) or '',
  'coupon_open_cents', coupon and 0 or '',
  'redeemed', coupon and 0 or '',
  'min_order', coupon and ARGV[22] or '',
})

local first = SHARES_FROM
if ARGV[6] == '1' then
  -- The sharer's share: share 1, recorded as grab.lua records a win.
  local amount = ARGV[first]
  redis.call('HSET', KEYS[7], ARGV[4], string.format('1:%s:%d', amount, now))
  redis.call('HSET', KEYS[5], 'grabbed_count', 1, 'grabbed_cents', amount,
    'best_user', ARGV[4], 'best_cents', amount)
  redis.call('RPUSH', KEYS[10], ARGV[4])
  first = first + 1
end
shares_push(KEYS[6], first)

redis.call('ZADD', KEYS[8], int(now), ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[8], '-inf', '(' .. int(now - index_keep_ms))
redis.call('HSET', KEYS[3], record_id, ARGV[14] .. '\n' .. ARGV[1])
redis.call('ZADD', KEYS[4], forget_score(now, keep_ms), record_id)
prune_records(KEYS[3], KEYS[4], now)
return {'created', ARGV[1], int(after)}
