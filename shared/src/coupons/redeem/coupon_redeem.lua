-- (records.lua, journal.lua and coupon_record.lua are prepended: int, now_ms,
-- call_answer_read, call_answer_add, journal_add, coupon_record, coupon_checkout,
-- minimum_refusal, pool_closing.)
-- coupon_redeem.lua: redeem an issued coupon at checkout, at most once: the pool that issued the
-- code records the order that redeemed it. A hold of the same order (coupon_hold.lua) is
-- committed; a coupon held by another order (unlapsed) is refused. Everything is checked before
-- the first write.
--
-- helpers: records.lua journal.lua coupon_record.lua
-- acknowledged: WAIT for REDIS_WAIT_REPLICAS replicas before the answer
-- redis users: app
-- KEYS[1] pool: the issuing pool's hash (see coupon_create_pool.lua)
-- KEYS[2] issued: the issuing pool's issued codes: code or index -> the record (see
--         coupon_record.lua)
-- KEYS[3] journal: the pool's tag's journal (journal.lua): a redemption appends coupon_redeemed
--         (extra: the order reference, then "\n<discount_cents>" when the discount is known)
-- KEYS[4] books: a share's coupon's merchant hash (its books); else any key of the slot,
--         never touched
-- KEYS[5] grabs: a share's coupon's packet's grabs hash (user -> share record: the coupon's
--         value); else any key of the slot, never touched
-- KEYS[6] call_answer: this call's answer, `<issued>:call:<call id>` (records.lua:
--         call_answer_add)
-- ARGV[1] code: the code as the pool keys it (uploaded code, or generated index in decimal)
-- ARGV[2] user_id: the user the checkout says holds it
-- ARGV[3] order_reference: the order redeeming it
-- ARGV[4] campaign_id: the campaign (the journal entry's reference is "<campaign_id>/<code>")
-- ARGV[5] order_total_cents: the order's total, cents, or '' (not given; refused when the
--         campaign has a minimum order)
-- ARGV[6] discount_cents: the order's discount (computed by the function from the campaign's
--         rule), cents, or '' (no total given, or no rule); without a total, the discount of
--         the order's hold, if it has one
-- ARGV[7] call: this call's id (16 hex digits), written into the coupon's record; a re-run of
--         the same call, at any later moment, answers its first run's answer from KEYS[6],
--         writing nothing
-- ARGV[8] share: '1' for a merchant packet's share's coupon (KEYS[1] is the packet's meta,
--         KEYS[2] its coupons hash, ARGV[1] the share id, ARGV[4] the packet id), else ''
-- ARGV[9] call_keep_ms (u64): how long KEYS[6] is kept (the re-send horizon), ms
--
-- A share's coupon is worth its share: its redemption moves those cents in the merchant's
-- books from `outstanding` to `paid_coupons`, and out of the packet's `coupon_open_cents`,
-- in the same step. Once the packet's unredeemed coupons went back to the merchant
-- (`coupons_settled_at`, settle.lua) the coupon is 'expired', whatever the clock says.
-- Every answer but not_found, expired, below_minimum and order_total_required is recorded
-- under KEYS[6].
--
-- Returns:
--   'not_found'                          no such pool (or its keys expire within
--                                        call_keep_ms), or the code is not issued to user_id
--                                        (unknown and someone else's are not told apart)
--   'redeemed:<redeemed_at_ms>:<repeat>:<discount>'   redeemed for order_reference by this
--                                        call (repeat 0) or by another call of the order
--                                        (repeat 1, even after redeem_by); discount '' unknown
--   'order_reference_reused:<redeemed_at_ms>:<discount>'   this order redeemed it with
--                                        another discount (ARGV[6] given and not the
--                                        redemption's); the coupon unchanged (the answer
--                                        recorded)
--   'already_redeemed:<redeemed_at_ms>:<order_reference>'   redeemed by another order; the
--                                        coupon unchanged (the answer recorded)
--   'held:<held_until_ms>'               another order holds it (unlapsed); the coupon
--                                        unchanged (the answer recorded)
--   'expired:<redeem_by_ms>'             Redis TIME is at or past redeem_by; nothing written
--   'below_minimum:<min_order_cents>'    order_total_cents is below the campaign's minimum;
--                                        nothing written
--   'order_total_required:<min_order_cents>'   the campaign has a minimum order and no
--                                        order_total_cents was given; nothing written
local answered = call_answer_read(KEYS[6])
if answered then
  return answered
end
if pool_closing(KEYS[1], tonumber(ARGV[9])) then
  return 'not_found'
end
local meta = redis.call('HMGET', KEYS[1], 'redeem_by', 'min_order', 'coupons_settled_at')
local redeem_by = meta[1]
if not redeem_by then
  return 'not_found'
end
local text = redis.call('HGET', KEYS[2], ARGV[1])
if not text then
  return 'not_found'
end
local r = coupon_record(text)
if r.user ~= ARGV[2] then
  return 'not_found'
end
local now = now_ms()
local keep = tonumber(ARGV[9])
if r.state == 'redeemed' then
  if r.order == ARGV[3] then
    if r.call == ARGV[7] then
      -- Written by this call before its answer had its own key: its first answer, nothing
      -- written.
      return 'redeemed:' .. r.at .. ':0:' .. r.discount
    end
    -- The same order with another discount (another total, or a total where the first call
    -- gave none): another call under this order's key, refused.
    if ARGV[6] ~= '' and ARGV[6] ~= r.discount then
      return call_answer_add(KEYS[6], 'order_reference_reused:' .. r.at .. ':' .. r.discount,
        keep)
    end
    return call_answer_add(KEYS[6], 'redeemed:' .. r.at .. ':1:' .. r.discount, keep)
  end
  return call_answer_add(KEYS[6], 'already_redeemed:' .. r.at .. ':' .. r.order, keep)
end
local mine = r.state == 'held' and r.order == ARGV[3]
if r.state == 'held' and not mine and tonumber(r.at) > now then
  return call_answer_add(KEYS[6], 'held:' .. r.at, keep)
end
if now >= tonumber(redeem_by) or meta[3] then
  return 'expired:' .. redeem_by
end
local short = minimum_refusal(meta[2], ARGV[5])
if short then
  return short
end
local discount = ARGV[6]
if ARGV[5] == '' and mine then
  discount = r.discount
end
local value = nil
if ARGV[8] == '1' then
  local share = redis.call('HGET', KEYS[5], r.user)
  local id, amount = string.match(share or '', '^(%d+):(%d+):')
  value = tonumber(amount)
  local open = tonumber(redis.call('HGET', KEYS[1], 'coupon_open_cents'))
  if id ~= ARGV[1] or not value or not open or open < value then
    return redis.error_reply('ERR hongbao: coupon_redeem: share coupon without its share or open value')
  end
end
-- Writes start here.
if value then
  redis.call('HINCRBY', KEYS[1], 'coupon_open_cents', int(-value))
  redis.call('HINCRBY', KEYS[4], 'outstanding', int(-value))
  redis.call('HINCRBY', KEYS[4], 'paid_coupons', int(value))
end
redis.call('HINCRBY', KEYS[1], 'redeemed', 1)
local extra = ARGV[3]
if discount ~= '' then
  extra = extra .. '\n' .. discount
end
journal_add(KEYS[3], 'coupon_redeemed', ARGV[2], 0, ARGV[4] .. '/' .. ARGV[1], now, 0, extra)
redis.call('HSET', KEYS[2], ARGV[1],
  coupon_checkout(r, ARGV[3], now, 'redeemed', discount, ARGV[7]))
return call_answer_add(KEYS[6], 'redeemed:' .. int(now) .. ':0:' .. discount, keep)
