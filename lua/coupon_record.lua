-- coupon_record.lua: an issued coupon's record, prepended (after records.lua, and
-- journal.lua where a script journals) to the checkout scripts: coupon_hold.lua,
-- coupon_redeem.lua and coupon_release.lua.
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
-- as the pool's records): another release call of the same order answers it (repeat 1).
-- A pool's coupon is marked released too: field "<code>\n" (an empty order reference, which no
-- order has) -> "<released_at_ms>", the last release (GET /campaigns/{id}/coupons shows a
-- coupon issued again after a release as released).
--
-- Every checkout call (hold, redeem, release) keeps its answer under its own key,
-- `<issued key>:call:<call id>` (records.lua: call_answer_read, call_answer_add), read before
-- anything else, so a re-run at any later moment (also after the coupon moved on, or after
-- its pool's keys expired) answers its first run and writes nothing. The answers that depend on
-- no transition (no such code, expired, below the minimum, the order total required) are not
-- recorded: a re-run gives them again by itself.

-- Whether the pool whose hash is `pool` is in the last `keep_ms` ms of its keys' life (they
-- expire at the pool's end plus its retention; a key without a TTL never does): a checkout
-- call then answers 'not_found' and writes nothing, as it will once the keys are gone. So
-- every answer recorded under a call's key is recorded at least keep_ms before its pool's keys
-- expire, and a re-run within the re-send horizon still finds the pool, and so its answer.
local function pool_closing(pool, keep_ms)
  local ttl = redis.call('PTTL', pool)
  return ttl >= 0 and ttl < keep_ms
end

-- The refusal of an order of `total` cents ('' : not given) under a minimum order of
-- `min_order` cents (false or '': none): 'order_total_required:<min>' without a total (the
-- minimum cannot be skipped), 'below_minimum:<min>' under it; nil when the order may use it.
local function minimum_refusal(min_order, total)
  if min_order and min_order ~= '' then
    if total == '' then
      return 'order_total_required:' .. min_order
    end
    if tonumber(total) < tonumber(min_order) then
      return 'below_minimum:' .. min_order
    end
  end
  return nil
end

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
