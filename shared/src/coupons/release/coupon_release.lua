-- (records.lua, journal.lua, ledger.lua and coupon_record.lua are prepended: int, now_ms,
-- call_answer_read, call_answer_add, journal_add, ledger_push, coupon_record,
-- pool_closing.)
-- coupon_release.lua: an order lets go of its coupon at checkout: its hold is released, or its
-- redemption reversed (the order failed or was refunded). Either way the coupon is issued again
-- to the same user, redeemable until redeem_by; a reversed redemption is counted back once
-- (the pool's redeemed count goes down by one) and journaled (coupon_released). Everything is
-- checked before the first write.
--
-- helpers: records.lua journal.lua ledger.lua coupon_record.lua
-- acknowledged: WAIT for REDIS_WAIT_REPLICAS replicas before the answer
-- redis users: app
-- KEYS[1] pool: the issuing pool's hash (see coupon_create_pool.lua)
-- KEYS[2] issued: the issuing pool's issued codes: code or index -> the record,
--         "<code>\n<order>" -> the release's memory, and (a pool's coupon) "<code>\n" -> the
--         coupon's last release, <released_at_ms> (see coupon_record.lua)
-- KEYS[3] journal: the pool's tag's journal (journal.lua): a reversed redemption appends
--         coupon_released (user: the coupon's holder; extra: the order reference)
-- KEYS[4] books: a share's coupon's merchant hash (its books); else any key of the slot,
--         never touched
-- KEYS[5] grabs: a share's coupon's packet's grabs hash (user -> share record: the coupon's
--         value); else any key of the slot, never touched
-- KEYS[6] ledger: a share's coupon's merchant's ledger list; else any key of the slot, never
--         touched
-- KEYS[7] call_answer: this call's answer, `<issued>:call:<call id>` (records.lua:
--         call_answer_add)
-- ARGV[1] code: the code as the pool keys it (uploaded code, or generated index in decimal)
-- ARGV[2] order_reference: the order releasing it
-- ARGV[3] campaign_id: the campaign (the journal entry's reference is "<campaign_id>/<code>")
-- ARGV[4] call: this call's id (16 hex digits), written into the release's memory; a re-run
--         of the same call, at any later moment, answers its first run's answer from KEYS[7],
--         writing nothing
-- ARGV[5] share: '1' for a merchant packet's share's coupon (KEYS[1] is the packet's meta,
--         KEYS[2] its coupons hash, ARGV[1] the share id, ARGV[3] the packet id), else ''
-- ARGV[6] ledger_cap (u32): ledger length cap (entries)
-- ARGV[7] call_keep_ms (u64): how long KEYS[7] is kept (the re-send horizon), ms
--
-- A share's coupon's reversed redemption moves its value back in the merchant's books, in
-- the same step: from `paid_coupons` to `outstanding` (and the packet's
-- `coupon_open_cents`) while the packet's coupons are unsettled; once settle.lua returned
-- the unredeemed ones (`coupons_settled_at`), straight back to `balance`, journaled
-- merchant_coupon_refund (reference `<packet_id>/<share_id>`), so it is returned once.
--
-- The order is looked for in this order: this very call's answer (KEYS[7]: a re-run answers
-- it, whatever happened since); the coupon held or redeemed by the order (released now, also
-- a lapsed hold); the order's memory (an earlier release by another call:
-- its answer, repeat 1, also after another order took the coupon); the coupon held (unlapsed)
-- or redeemed by another order (refused). The same order may hold and redeem the coupon again
-- after its release (a new cycle, which a later release releases in turn). Every answer of a
-- coupon that exists is recorded under KEYS[7] (not_found too: re-run after the order took
-- the coupon, it must still release nothing).
--
-- Returns:
--   'released:<hold|redemption>:<released_at_ms>:<repeat>'   released now (repeat 0) or
--                                        before (repeat 1)
--   'held:<held_until_ms>'               another order holds it; the coupon unchanged (the
--                                        answer recorded)
--   'already_redeemed:<redeemed_at_ms>:<order_reference>'   another order redeemed it; the
--                                        coupon unchanged (the answer recorded)
--   'not_found'                          no such pool (or its keys expire within
--                                        call_keep_ms) or code, or the order never held or
--                                        redeemed it; the coupon unchanged (recorded when the
--                                        code exists)
local answered = call_answer_read(KEYS[7])
if answered then
  return answered
end
if pool_closing(KEYS[1], tonumber(ARGV[7])) then
  return 'not_found'
end
local pool = redis.call('HMGET', KEYS[1], 'redeem_by', 'coupons_settled_at', 'merchant_id')
local redeem_by = pool[1]
if not redeem_by then
  return 'not_found'
end
local memo_field = ARGV[1] .. '\n' .. ARGV[2]
local text, memo = unpack(redis.call('HMGET', KEYS[2], ARGV[1], memo_field))
local now = now_ms()
local kind, at, call
if memo then
  kind, at, call = string.match(memo, '^([^\n]*)\n([^\n]*)\n([^\n]*)$')
  if call == ARGV[4] then
    -- Written by this call before its answer had its own key: its first answer, nothing
    -- written.
    return 'released:' .. kind .. ':' .. at .. ':0'
  end
end
if not text then
  return 'not_found'
end
local r = coupon_record(text)
local keep = tonumber(ARGV[7])
if r.order == ARGV[2] then
  local released = 'hold'
  if r.state == 'redeemed' then
    released = 'redemption'
  end
  local value = nil
  if released == 'redemption' and ARGV[5] == '1' then
    local share = redis.call('HGET', KEYS[5], r.user)
    local id, amount = string.match(share or '', '^(%d+):(%d+):')
    value = tonumber(amount)
    if id ~= ARGV[1] or not value or not pool[3] then
      return redis.error_reply('ERR hongbao: coupon_release: share coupon without its share or merchant')
    end
  end
  -- Writes start here.
  if value then
    redis.call('HINCRBY', KEYS[4], 'paid_coupons', int(-value))
    if pool[2] then
      local balance = redis.call('HINCRBY', KEYS[4], 'balance', int(value))
      redis.call('HINCRBY', KEYS[1], 'coupon_refunded_cents', int(value))
      ledger_push(KEYS[6], KEYS[4],
        'refund_credit|' .. int(value) .. '|' .. int(now) .. '|' .. ARGV[3], tonumber(ARGV[6]))
      journal_add(KEYS[3], 'merchant_coupon_refund', pool[3], value, ARGV[3] .. '/' .. ARGV[1],
        now, balance)
    else
      redis.call('HINCRBY', KEYS[4], 'outstanding', int(value))
      redis.call('HINCRBY', KEYS[1], 'coupon_open_cents', int(value))
    end
  end
  if released == 'redemption' then
    redis.call('HINCRBY', KEYS[1], 'redeemed', -1)
    journal_add(KEYS[3], 'coupon_released', r.user, 0, ARGV[3] .. '/' .. ARGV[1], now, 0, ARGV[2])
  end
  redis.call('HSET', KEYS[2], ARGV[1], r.user .. '\n' .. r.grabbed,
    memo_field, released .. '\n' .. int(now) .. '\n' .. ARGV[4])
  if ARGV[5] ~= '1' then
    redis.call('HSET', KEYS[2], ARGV[1] .. '\n', int(now))
  end
  return call_answer_add(KEYS[7], 'released:' .. released .. ':' .. int(now) .. ':0', keep)
end
if memo then
  return call_answer_add(KEYS[7], 'released:' .. kind .. ':' .. at .. ':1', keep)
end
if r.state == 'redeemed' then
  return call_answer_add(KEYS[7], 'already_redeemed:' .. r.at .. ':' .. r.order, keep)
end
if r.state == 'held' and tonumber(r.at) > now then
  return call_answer_add(KEYS[7], 'held:' .. r.at, keep)
end
-- Recorded too: re-run after this order held or redeemed the coupon, it must not release it.
return call_answer_add(KEYS[7], 'not_found', keep)
