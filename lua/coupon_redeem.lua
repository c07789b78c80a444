-- (records.lua and journal.lua are prepended: int, journal_add.)
-- coupon_redeem.lua: redeem an issued coupon at checkout, at most once: the pool that issued the
-- code records the order that redeemed it.
--
-- KEYS[1] pool: the issuing pool's hash (see coupon_create_pool.lua)
-- KEYS[2] issued: the issuing pool's issued codes: code (uploaded) or index (generated) ->
--         "<user>\n<grabbed_at_ms>", plus "\n<order_reference>\n<redeemed_at_ms>" once redeemed
-- KEYS[3] journal: the pool's tag's journal (journal.lua): a redemption appends coupon_redeemed
--         (extra: the order reference)
-- ARGV[1] code: the code as the pool keys it (uploaded code, or generated index in decimal)
-- ARGV[2] user_id: the user the checkout says holds it
-- ARGV[3] order_reference: the order redeeming it
-- ARGV[4] campaign_id: the campaign (the journal entry's reference is "<campaign_id>/<code>")
--
-- Returns:
--   'not_found'                          no such pool, or the code is not issued to user_id
--                                        (unknown and someone else's are not told apart)
--   'redeemed:<redeemed_at_ms>:<repeat>' redeemed for order_reference now (repeat 0) or before
--                                        (repeat 1: the same order again, even after redeem_by)
--   'already_redeemed:<redeemed_at_ms>:<order_reference>'   redeemed by another order
--   'expired:<redeem_by_ms>'             Redis TIME is at or past redeem_by; nothing written
local redeem_by = redis.call('HGET', KEYS[1], 'redeem_by')
if not redeem_by then
  return 'not_found'
end
local record = redis.call('HGET', KEYS[2], ARGV[1])
if not record then
  return 'not_found'
end
local holder, _, order, at = string.match(record, '^([^\n]*)\n([^\n]*)\n?([^\n]*)\n?([^\n]*)$')
if holder ~= ARGV[2] then
  return 'not_found'
end
if order ~= '' then
  if order == ARGV[3] then
    return 'redeemed:' .. at .. ':1'
  end
  return 'already_redeemed:' .. at .. ':' .. order
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if now >= tonumber(redeem_by) then
  return 'expired:' .. redeem_by
end
local stamp = string.format('%d', now)
redis.call('HSET', KEYS[2], ARGV[1], record .. '\n' .. ARGV[3] .. '\n' .. stamp)
redis.call('HINCRBY', KEYS[1], 'redeemed', 1)
journal_add(KEYS[3], 'coupon_redeemed', ARGV[2], 0, ARGV[4] .. '/' .. ARGV[1], now, 0, ARGV[3])
return 'redeemed:' .. stamp .. ':0'
