-- (records.lua and coupon_record.lua are prepended: int, now_ms, coupon_record,
-- coupon_checkout.)
-- coupon_hold.lua: hold an issued coupon for one order at checkout, until the order is paid
-- (coupon_redeem.lua commits the hold) or fails (coupon_release.lua), or the hold lapses by
-- itself at held_until (Redis TIME; no job is needed). Everything is checked before the one
-- write.
--
-- KEYS[1] pool: the issuing pool's hash (see coupon_create_pool.lua; min_order, redeem_by)
-- KEYS[2] issued: the issuing pool's issued codes: code or index -> the record
--         (see coupon_record.lua)
-- ARGV[1] code: the code as the pool keys it (uploaded code, or generated index in decimal)
-- ARGV[2] user_id: the user the checkout says holds it
-- ARGV[3] order_reference: the order holding it
-- ARGV[4] hold_ms: how long the hold lasts from now, ms (at least 1; the API allows 30 s to
--         1 h)
-- ARGV[5] order_total_cents: the order's total, cents, or '' (not given)
-- ARGV[6] discount_cents: the order's discount (computed by the function from the campaign's
--         rule), cents, or '' (no total given, or no rule)
-- ARGV[7] call: this call's id (16 hex digits): a re-run of the same call answers its first run
--
-- A hold lasts until min(now + hold_ms, redeem_by): it never outlives the coupon. The same
-- order again (another call) extends it to that instant, never shortens it, and takes its
-- discount when it gives a total (a call without one keeps the hold's).
--
-- Returns:
--   'not_found'                          no such pool, or the code is not issued to user_id
--   'held:<held_until_ms>:<discount>'    held for order_reference (now, or by this call's run)
--   'held_by_other:<held_until_ms>'      another order holds it (unlapsed); nothing written
--   'already_redeemed:<redeemed_at_ms>:<order_reference>'   redeemed (by any order, this one
--                                        included); nothing written
--   'expired:<redeem_by_ms>'             Redis TIME is at or past redeem_by; nothing written
--   'below_minimum:<min_order_cents>'    order_total_cents is below the campaign's minimum;
--                                        nothing written
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
if r.state == 'redeemed' then
  return 'already_redeemed:' .. r.at .. ':' .. r.order
end
local mine = r.state == 'held' and r.order == ARGV[3]
if mine and r.call == ARGV[7] then
  return 'held:' .. r.at .. ':' .. r.discount
end
local now = now_ms()
if r.state == 'held' and not mine and tonumber(r.at) > now then
  return 'held_by_other:' .. r.at
end
if now >= tonumber(redeem_by) then
  return 'expired:' .. redeem_by
end
local min_order = meta[2]
if ARGV[5] ~= '' and min_order and min_order ~= '' and tonumber(ARGV[5]) < tonumber(min_order) then
  return 'below_minimum:' .. min_order
end
local held_until = math.min(now + tonumber(ARGV[4]), tonumber(redeem_by))
local discount = ARGV[6]
if mine then
  held_until = math.max(held_until, tonumber(r.at))
  if ARGV[5] == '' then
    discount = r.discount
  end
end
redis.call('HSET', KEYS[2], ARGV[1],
  coupon_checkout(r, ARGV[3], held_until, 'held', discount, ARGV[7]))
return 'held:' .. int(held_until) .. ':' .. discount
