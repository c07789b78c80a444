-- coupon_record.lua: an issued coupon's record and call log, prepended (after records.lua, and
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
--
-- The coupon's call log, field "\n<code>" of the same hash, records the one answer of every
-- checkout call (hold, redeem, release) that found the coupon, one line per call:
--   "<call> <forget_after_ms> <answer>"
-- written by the call's first run, first writer wins, never rewritten by a later transition:
-- a re-run of the call (the same call id, sent again by the client, at any later moment) finds
-- its line first and answers it, writing nothing. A line is kept keep_ms (the scripts' ARGV,
-- `HONGBAO_IDEMPOTENCY_TTL_SECS`: longer than any re-send can arrive) and then dropped by the
-- coupon's next recorded call. A coupon remembers at most CALL_LOG_MAX calls at a time: a call
-- that would pass it is refused (busy), retry after the oldest line is dropped, writing nothing.
-- The answers that depend on no transition (no such code, expired, below the minimum, the
-- order total required) are not recorded: a re-run gives them again by itself.
local CALL_LOG_MAX = 64

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

-- The field of code `code`'s call log.
local function call_log_field(code)
  return '\n' .. code
end

-- Reads call log `log` (its text, or false/nil) at `now` (Unix ms): the answer recorded for
-- call id `call` (nil: none), the lines still kept, and the earliest forget time among them.
local function call_log_read(log, call, now)
  local kept, answer, earliest = {}, nil, nil
  if log then
    for line in string.gmatch(log, '[^\n]+') do
      local c, forget, a = string.match(line, '^(%S+) (%d+) (.*)$')
      if c == call then
        answer = a
      end
      local f = tonumber(forget)
      if f > now then
        kept[#kept + 1] = line
        if not earliest or f < earliest then
          earliest = f
        end
      end
    end
  end
  return answer, kept, earliest
end

-- 'busy:<retry_after_ms>' when call log `kept` (call_log_read at `now`) is full, else nil.
local function call_log_full(kept, earliest, now)
  if #kept >= CALL_LOG_MAX then
    return 'busy:' .. int(earliest - now)
  end
  return nil
end

-- Records `answer` of call id `call` at `now` in the call log `field` of hash `hash`, beside
-- its `kept` lines (call_log_read), kept `keep_ms` ms; returns `answer`.
local function call_log_add(hash, field, kept, call, answer, now, keep_ms)
  kept[#kept + 1] = call .. ' ' .. int(now + keep_ms) .. ' ' .. answer
  redis.call('HSET', hash, field, table.concat(kept, '\n'))
  return answer
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
