-- (records.lua and coupon_record.lua are prepended: int, now_ms, call_answer_read,
-- call_answer_add, coupon_record, coupon_checkout, minimum_refusal,
-- pool_closing.)
-- coupon_hold.lua: hold an issued coupon for one order at checkout, until the order is paid
-- (coupon_redeem.lua commits the hold) or fails (coupon_release.lua), or the hold lapses by
-- itself at held_until (Redis TIME; no job is needed). Everything is checked before the one
-- write.
--
-- helpers: records.lua coupon_record.lua
-- acknowledged: WAIT for REDIS_WAIT_REPLICAS replicas before the answer
-- redis users: app
-- KEYS[1] pool: the issuing pool's hash (see coupon_create_pool.lua; min_order, redeem_by)
-- KEYS[2] issued: the issuing pool's issued codes: code or index -> the record
--         (see coupon_record.lua)
-- KEYS[3] call_answer: this call's answer, `<issued>:call:<call id>` (records.lua:
--         call_answer_add)
-- ARGV[1] code: the code as the pool keys it (uploaded code, or generated index in decimal)
-- ARGV[2] user_id: the user the checkout says holds it
-- ARGV[3] order_reference: the order holding it
-- ARGV[4] hold_ms (u64): how long the hold lasts from now, ms (at least 1; the API allows 30 s to
--         1 h)
-- ARGV[5] order_total_cents: the order's total, cents, or '' (not given; refused when the
--         campaign has a minimum order)
-- ARGV[6] discount_cents: the order's discount (computed by the function from the campaign's
--         rule), cents, or '' (no total given, or no rule)
-- ARGV[7] call: this call's id (16 hex digits), written into the coupon's record; a re-run of
--         the same call, at any later moment, answers its first run's answer from KEYS[3],
--         writing nothing
-- ARGV[8] call_keep_ms (u64): how long KEYS[3] is kept (the re-send horizon), ms
--
-- A hold lasts until min(now + hold_ms, redeem_by): it never outlives the coupon. The same
-- order again (another call) extends it to that instant, never shortens it, and takes its
-- discount when it gives a total (a call without one keeps the hold's). Every answer but
-- not_found, expired, below_minimum and order_total_required is recorded under KEYS[3].
--
-- Returns:
--   'not_found'                          no such pool (or its keys expire within
--                                        call_keep_ms), or the code is not issued to user_id
--   'held:<held_until_ms>:<discount>:<extended>'   held for order_reference (now, or by this
--                                        call's run); extended 1: the order held it, unlapsed,
--                                        before this call (a hold sent again), else 0
--   'held_by_other:<held_until_ms>'      another order holds it (unlapsed); the coupon
--                                        unchanged (the answer recorded)
--   'already_redeemed:<redeemed_at_ms>:<order_reference>'   redeemed (by any order, this one
--                                        included); the coupon unchanged (the answer recorded)
--   'expired:<redeem_by_ms>'             Redis TIME is at or past redeem_by; nothing written
--   'below_minimum:<min_order_cents>'    order_total_cents is below the campaign's minimum;
--                                        nothing written
--   'order_total_required:<min_order_cents>'   the campaign has a minimum order and no
--                                        order_total_cents was given; nothing written
local answered = call_answer_read(KEYS[3])
if answered then
  return answered
end
if pool_closing(KEYS[1], tonumber(ARGV[8])) then
  return 'not_found'
end
local meta = redis.call('HMGET', KEYS[1], 'redeem_by', 'min_order')
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
local keep = tonumber(ARGV[8])
if r.state == 'redeemed' then
  return call_answer_add(KEYS[3], 'already_redeemed:' .. r.at .. ':' .. r.order, keep)
end
local mine = r.state == 'held' and r.order == ARGV[3]
if mine and r.call == ARGV[7] then
  -- Written by this call before its answer had its own key: its first answer, nothing written.
  return 'held:' .. r.at .. ':' .. r.discount
end
if r.state == 'held' and not mine and tonumber(r.at) > now then
  return call_answer_add(KEYS[3], 'held_by_other:' .. r.at, keep)
end
if now >= tonumber(redeem_by) then
  return 'expired:' .. redeem_by
end
local short = minimum_refusal(meta[2], ARGV[5])
if short then
  return short
end
local held_until = math.min(now + tonumber(ARGV[4]), tonumber(redeem_by))
local discount = ARGV[6]
if mine then
  held_until = math.max(held_until, tonumber(r.at))
  if ARGV[5] == '' then
    discount = r.discount
  end
end
-- Writes start here.
redis.call('HSET', KEYS[2], ARGV[1],
  coupon_checkout(r, ARGV[3], held_until, 'held', discount, ARGV[7]))
local extended = (mine and tonumber(r.at) > now) and '1' or '0'
return call_answer_add(KEYS[3], 'held:' .. int(held_until) .. ':' .. discount .. ':' .. extended,
  keep)
