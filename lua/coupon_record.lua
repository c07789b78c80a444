-- coupon_record.lua: an issued coupon's record, prepended (after records.lua, and journal.lua
-- where a script journals) to the checkout scripts: coupon_hold.lua, coupon_redeem.lua and
-- coupon_release.lua.
--
-- The issuing pool's issued hash maps a code (uploaded) or an index (generated) to its record,
-- newline-separated (a user id, an order reference and a code hold no newline):
--   "<user>\n<grabbed_at_ms>"                         issued (coupon_grab.lua, coupon_take.lua;
--                                                      and again after a release)
--   "<user>\n<grabbed_at_ms>\n<order>\n<redeemed_at_ms>"
--                                                     redeemed, written before holds existed
--   "<user>\n<grabbed_at_ms>\n<order>\n<held_until_ms>\nheld\n<discount>\n<call>"
--                                                     held for <order> until held_until_ms
--                                                     (exclusive: from then on the hold has
--                                                     lapsed and the coupon is free again)
--   "<user>\n<grabbed_at_ms>\n<order>\n<redeemed_at_ms>\nredeemed\n<discount>\n<call>"
--                                                     redeemed by <order>
-- <discount> is the order's discount in cents ('' when no order total was given), <call> the
-- id of the HTTP call that wrote the record (16 hex digits): the same call sent again (a lost
-- reply re-sent by the client) finds its own record and answers as its first run did.
--
-- A release also leaves a memory beside the code, field "<code>\n<order>" ->
-- "<hold|redemption>\n<released_at_ms>\n<call>", in the same hash (so it lives exactly as long
-- as the pool's records): a repeat of the release answers it.

-- The record `text` as a table: user, grabbed, and for a held or redeemed coupon order, at
-- (held_until_ms or redeemed_at_ms, as text), state ('held' | 'redeemed'), discount ('' or
-- cents, as text) and call ('' for a redemption written before holds existed).
local function coupon_record(text)
  local f = {}
  for part in string.gmatch(text .. '\n', '([^\n]*)\n') do
    f[#f + 1] = part
  end
  local r = { user = f[1], grabbed = f[2] }
  if #f >= 4 then
    r.order, r.at = f[3], f[4]
    r.state, r.discount, r.call = f[5] or 'redeemed', f[6] or '', f[7] or ''
  end
  return r
end

-- The record of coupon r (its user and grab) held or redeemed (`state`) by `order` at `at`
-- (Unix ms), with `discount` ('' or cents) by call `call`.
local function coupon_checkout(r, order, at, state, discount, call)
  return r.user .. '\n' .. r.grabbed .. '\n' .. order .. '\n' .. int(at) .. '\n' .. state ..
    '\n' .. discount .. '\n' .. call
end
