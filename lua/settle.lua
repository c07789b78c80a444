-- settle.lua: refund an expired red packet to its sender, exactly once.
-- Prepended with records.lua (int, now_ms, MAX_EXACT), history.lua (history_prefix, history_replace) and
-- journal.lua (journal_add: a refund_credit entry when the refund is not 0, and a
-- packet_settled entry, when this call settles), then ledger.lua (ledger_push: a refund's
-- ledger item).
--
-- The payer's account shares the packet's hash tag, so the refund is atomic with settlement.
-- The payer is the sender, or for a merchant packet (meta `merchant_id`) its merchant: the
-- refund then goes back to the budget's `balance` out of its `reserved`, in the merchant's
-- ledger, journaled as merchant_refund and merchant_packet_settled, with no sent history.
--
-- A merchant packet paid out as coupons (meta `redeem_by`) settles in two phases. At
-- expires_at the un-grabbed and unclaimed shares go back as above, but the keys keep no TTL:
-- the packet's coupons are redeemable until redeem_by, and the answer is 'coupons_open'. At
-- redeem_by the coupons never redeemed (`coupon_open_cents`) go back from the books'
-- `outstanding` to `balance`, once (`coupons_settled_at` marks it; a merchant_coupon_refund
-- entry), and the keys get their retention TTL. A late run does both phases in one call.
-- helpers: records.lua history.lua journal.lua ledger.lua
-- acknowledged: WAIT for REDIS_WAIT_REPLICAS replicas before the answer
-- redis users: app
-- KEYS[1] meta: packet meta hash
-- KEYS[2] shares: share list
-- KEYS[3] grabs: grabs hash
-- KEYS[4] order: grab order list (the grabbers' user ids by share id; only expired here)
-- KEYS[5] claims: claims hash
-- KEYS[6] wallet: sender wallet hash (a merchant packet: the merchant's hash)
-- KEYS[7] ledger: sender ledger list (a merchant packet: the merchant's ledger)
-- KEYS[8] recipients: recipients set (targeted packets; deleted once settled: no grab comes
--         after expires_at, and a grabber sees the packet by their grab)
-- KEYS[9] sent: the sender's "sent" history list: the packet's entry gets its refunded_cents
--         (a merchant packet: any key of the slot, not read or written)
-- KEYS[10] journal: the money journal of the packet's tag
-- KEYS[11] coupons: a coupon packet's coupons hash (expired with the rest; any key of the
--          slot for another packet)
-- KEYS[12] tickets: a draw packet's entrants (expired with the rest)
-- ARGV[1] packet_id: the packet's id
-- ARGV[2] retention_secs (u64): retention after settlement, seconds
-- ARGV[3] ledger_cap (u32): ledger length cap (entries)
-- ARGV[4] call_id: this call's id (the re-run of a call is known by it)
--
-- A call that settles (either phase) records its answer in the meta hash, first writer wins:
-- `settled_by` for the call that settled the shares, `coupons_settled_by` for the one that
-- refunded the unredeemed coupons (one call may be both), each
-- `<call_id>|<answer>|<refund_cents>|<settled_now>|<coupon_refund_cents>`. The same call sent
-- again (the cluster client re-sends a command whose reply was lost, maybe after a later call
-- moved the packet on) answers that record and writes nothing; a 'pending' answer lists the
-- claims pending now (re-driving them is the caller's next step either way). A call that
-- settled nothing records nothing: its answer is the packet's state, read again by a re-run.
-- The keys' retention TTL is set once (EXPIRE NX): a later call does not move it.
--
-- The refund is total - claimed: the un-grabbed shares plus the grabbed-but-unclaimed ones,
-- less what cancel.lua refunded already (a cancelled packet's un-grabbed shares); the packet's
-- refunded_cents (and the packet_settled entry's) is then everything refunded to the sender.
-- Every read and check (including the pending claims' share records) runs before the first
-- write: a script that fails half-way is not rolled back by Redis.
-- Returns one of:
--   {'missing'}                       no such packet (a phantom index entry, or long gone)
--   {'not_due', expires_at_ms}        Redis TIME is before expires_at: nothing changed
--   {'draw_due'}                      a draw packet whose draw is due and not complete: run it
--                                     (draw_run.lua), then call again; nothing changed
--   {'settled', refund_cents, settled_now, coupon_refund_cents}
--        settled (settled_now = 1 if by this call, else 0; refund_cents: this call's refund
--        when settled now, else everything refunded to the sender; coupon_refund_cents: the
--        unredeemed coupons this call refunded, else 0); keys now expire after ARGV[2] s
--   {'coupons_open', refund_cents, settled_now, redeem_by_ms}
--        a coupon packet settled (as 'settled'), whose coupons are redeemable until
--        redeem_by_ms: call again then (keys keep no TTL until)
--   {'pending', refund_cents, settled_now, user1, share1, claim_state1, user2, ...}
--        (a share record `share_id:amount_cents:grabbed_at_ms`, a state `pending:<claimed_at_ms>`)
--        settled, but these claims still await their wallet credit; re-drive them, then call
--        this script again (keys keep no TTL until no claim is pending)
local meta = redis.call('HMGET', KEYS[1], 'status', 'refunded_cents', 'expires_at',
  'total_cents', 'claimed_cents', 'created_at', 'sender_id', 'merchant_id', 'redeem_by',
  'coupon_open_cents', 'coupons_settled_at', 'settled_by', 'coupons_settled_by')
local status = meta[1]
if not status then
  return {'missing'}
end

-- Claims still waiting for their wallet credit (reads only).
local function pending_claims()
  local pending = {}
  local claims = redis.call('HGETALL', KEYS[5])
  for i = 1, #claims, 2 do
    if string.sub(claims[i + 1], 1, 8) == 'pending:' then
      local share = redis.call('HGET', KEYS[3], claims[i])
      local amount = share and tonumber(string.match(share, '^%d+:(%d+):'))
      if not amount then
        return nil
      end
      pending[#pending + 1] = claims[i]
      pending[#pending + 1] = share
      pending[#pending + 1] = claims[i + 1]
    end
  end
  return pending
end

-- The answer of this call's first run, when it settled: answered again, nothing written.
for _, record in ipairs({meta[12], meta[13]}) do
  local by, answer, refund, now_flag, coupon =
    string.match(record or '', '^([^|]+)|(%a+)|(%d+)|([01])|(%d+)$')
  if by == ARGV[4] then
    if answer == 'coupons_open' then
      return {'coupons_open', tonumber(refund), tonumber(now_flag), tonumber(meta[9])}
    elseif answer == 'pending' then
      local reply = {'pending', tonumber(refund), tonumber(now_flag)}
      for _, item in ipairs(pending_claims() or {}) do
        reply[#reply + 1] = item
      end
      return reply
    end
    return {'settled', tonumber(refund), tonumber(now_flag), tonumber(coupon)}
  end
end

local now = now_ms()
-- A draw packet whose draw is due and not complete (docs/design.md, "Draws"): its draw runs
-- first (draw_run.lua), so its winners get their shares before anything is refunded; nothing
-- written.
local draw = redis.call('HMGET', KEYS[1], 'draw_at', 'drawn_at')
if draw[1] and not draw[2] and status ~= 'cancelled' and status ~= 'settled'
    and now >= tonumber(draw[1]) then
  return {'draw_due'}
end
local merchant = meta[8]
-- A coupon packet's second phase: due (and not done) at redeem_by.
local redeem_by = merchant and tonumber(meta[9])
local coupons_due = redeem_by and not meta[11] and now >= redeem_by
local coupon_refund = 0
if coupons_due then
  coupon_refund = tonumber(meta[10])
  if not coupon_refund or coupon_refund < 0 then
    return redis.error_reply('ERR hongbao: settle: coupon_open_cents missing or negative')
  end
  if tonumber(redis.call('HGET', KEYS[6], 'balance') or '0') + coupon_refund > MAX_EXACT then
    return redis.error_reply('ERR hongbao: settle: balance would exceed 2^53 - 1 cents')
  end
end

local pending = pending_claims()
if not pending then
  return redis.error_reply('ERR hongbao: settle: pending claim without a share record')
end

local refund = tonumber(meta[2])
local settled_now = 0
if status ~= 'settled' then
  local expires_at = tonumber(meta[3])
  local total = tonumber(meta[4])
  local claimed = tonumber(meta[5])
  if not (expires_at and total and claimed) then
    return redis.error_reply('ERR hongbao: settle: packet fields missing or not integers')
  end
  if now < expires_at then
    return {'not_due', expires_at}
  end
  -- A cancelled packet: its un-grabbed shares were refunded at the cancel.
  local already = status == 'cancelled' and tonumber(meta[2]) or 0
  refund = total - claimed - already
  if refund < 0 then
    return redis.error_reply('ERR hongbao: settle: claimed more than the total')
  end
  local sender = meta[7] or merchant
  if not sender then
    return redis.error_reply('ERR hongbao: settle: packet without sender_id')
  end
  local balance = tonumber(redis.call('HGET', KEYS[6], 'balance') or '0')
  if balance + refund + coupon_refund > MAX_EXACT then
    return redis.error_reply('ERR hongbao: settle: balance would exceed 2^53 - 1 cents')
  end
  -- The sender's history entry of this packet (absent for packets created before history,
  -- or pruned by the retention): `...|<expires_at>|<refunded, empty until now>|<greeting>`.
  local sent, sent_head, sent_tail = nil, nil, nil
  local created_at = tonumber(meta[6])
  if created_at and not merchant then
    local prefix = history_prefix(created_at, ARGV[1])
    sent = redis.call('ZRANGEBYLEX', KEYS[9], '[' .. prefix .. ':', '(' .. prefix .. ';',
      'LIMIT', 0, 1)[1]
    if sent then
      sent_head, sent_tail = string.match(sent, '^(%d+:%x+:%d+|%d+|%d+|[^|]+|%d+|)%d*(|.*)$')
      if not sent_head then
        return redis.error_reply('ERR hongbao: settle: bad sent history entry')
      end
    end
  end
  -- Writes start here.
  if refund > 0 then
    balance = redis.call('HINCRBY', KEYS[6], 'balance', int(refund))
    if merchant then
      redis.call('HINCRBY', KEYS[6], 'reserved', int(-refund))
    end
    ledger_push(KEYS[7], KEYS[6], 'refund_credit|' .. int(refund) .. '|' .. int(now) .. '|' .. ARGV[1],
      tonumber(ARGV[3]))
    journal_add(KEYS[10], merchant and 'merchant_refund' or 'refund_credit', sender, refund,
      ARGV[1], now, balance)
  end
  journal_add(KEYS[10], merchant and 'merchant_packet_settled' or 'packet_settled', sender, 0,
    ARGV[1], now, balance, int(already + refund) .. '|' .. int(claimed))
  redis.call('HSET', KEYS[1], 'status', 'settled', 'refunded_cents', int(already + refund),
    'settled_at', int(now))
  -- The share list is kept (it expires with the other keys): the fairness receipt's reveal
  -- reads the un-grabbed shares from it.
  if sent then
    history_replace(KEYS[9], sent, sent_head .. int(already + refund) .. sent_tail)
  end
  settled_now = 1
end

if coupons_due then
  -- The coupons never redeemed go back to the merchant (every check ran above).
  local balance = tonumber(redis.call('HGET', KEYS[6], 'balance') or '0')
  if coupon_refund > 0 then
    balance = redis.call('HINCRBY', KEYS[6], 'balance', int(coupon_refund))
    redis.call('HINCRBY', KEYS[6], 'outstanding', int(-coupon_refund))
    -- Referenced `<packet_id>/coupons`: a movement of its own, never equal to the shares'
    -- refund of the same packet in the same millisecond (the same call may make both).
    local reference = ARGV[1] .. '/coupons'
    ledger_push(KEYS[7], KEYS[6],
      'refund_credit|' .. int(coupon_refund) .. '|' .. int(now) .. '|' .. reference,
      tonumber(ARGV[3]))
    journal_add(KEYS[10], 'merchant_coupon_refund', merchant, coupon_refund, reference, now,
      balance)
  end
  redis.call('HSET', KEYS[1], 'coupon_open_cents', 0, 'coupons_settled_at', int(now))
  redis.call('HINCRBY', KEYS[1], 'coupon_refunded_cents', int(coupon_refund))
end

-- This call's answer, recorded when it settled something (first writer wins: a field is
-- written by the one call that did its phase).
local answer = 'settled'
if redeem_by and not meta[11] and not coupons_due then
  answer = 'coupons_open'
elseif #pending > 0 then
  answer = 'pending'
end
local record = ARGV[4] .. '|' .. answer .. '|' .. int(refund) .. '|' .. settled_now .. '|'
  .. int(coupon_refund)
if settled_now == 1 then
  redis.call('HSET', KEYS[1], 'settled_by', record)
end
if coupons_due then
  redis.call('HSET', KEYS[1], 'coupons_settled_by', record)
end

if answer == 'coupons_open' then
  return {'coupons_open', refund, settled_now, int(redeem_by)}
end
if answer == 'pending' then
  local reply = {'pending', refund, settled_now}
  for i = 1, #pending do
    reply[#reply + 1] = pending[i]
  end
  return reply
end
local ttl = tonumber(ARGV[2])
for _, i in ipairs({1, 2, 3, 4, 5}) do
  redis.call('EXPIRE', KEYS[i], ttl, 'NX')
end
redis.call('DEL', KEYS[8])
redis.call('EXPIRE', KEYS[11], ttl, 'NX')
redis.call('EXPIRE', KEYS[12], ttl, 'NX')
return {'settled', refund, settled_now, coupon_refund}
