-- withdraw.lua: pay money out of a wallet (POST /wallet/withdrawals) or out of a merchant's
-- budget (POST /merchants/{merchant_id}/withdrawals), exactly once per reference. Prepended
-- with records.lua (int, now_ms, prune_records, forget_score, MAX_EXACT) and journal.lua
-- (journal_add), then ledger.lua (ledger_push).
--
-- All keys share the owner's hash tag.
-- helpers: records.lua journal.lua ledger.lua
-- acknowledged: WAIT for REDIS_WAIT_REPLICAS replicas before the answer
-- redis users: app
-- KEYS[1] books: the wallet's hash (field `balance`, cents) or the merchant's (its books:
--         `balance`, `withdrawn`, ... in cents; merchants::rules::Books)
-- KEYS[2] ledger: the owner's ledger list
-- KEYS[3] records: the owner's idempotency records hash (record id -> fingerprint,
--         records.lua: money_record)
-- KEYS[4] records_forget: its "forget after" sorted set (record id -> Unix ms)
-- KEYS[5] journal: the money journal of the owner's tag (one withdrawal or
--         merchant_withdrawal entry)
-- KEYS[6] call_answer: this call's refusal, `<books>:call:<call id>` (records.lua:
--         refusal_add)
-- ARGV[1] amount_cents (i64): the withdrawal, cents (> 0)
-- ARGV[2] reference: the caller's reference (the ledger entry's reference)
-- ARGV[3] record_id: the idempotency record id, `wd:<reference>`
-- ARGV[4] keep_ms (u64): keep the record this many ms (> 0)
-- ARGV[5] ledger_cap (u32): ledger length cap (entries)
-- ARGV[6] owner_id: the user or the merchant (the journal entry's user)
-- ARGV[7] call: this call's id (16 hex digits), kept in the record it writes (records.lua:
--         money_record): its re-run, at any later moment, answers its first 'applied'
-- ARGV[8] call_keep_ms (u64): how long a refusal's answer is kept (KEYS[6]'s TTL), ms (> 0)
-- ARGV[9] owner: 'wallet' or 'merchant'. A merchant's withdrawal moves `balance` and
--         `withdrawn` together, so its books close after it as before it, and its journal
--         entry is merchant_withdrawal; a wallet's moves `balance`, journaled as withdrawal.
--
-- Only the balance can be withdrawn: a merchant's money reserved in open packets or owed as
-- outstanding coupons is not. The record's fingerprint is the amount: the same reference with
-- the same amount is a repeat (nothing paid twice), with another amount a conflict. A
-- withdrawal refused for want of funds writes nothing, no record either: the same reference
-- may succeed after a deposit. Every check comes before the first write.
-- Returns one of:
--   {'applied', balance}              paid out now; the balance after, cents
--   {'repeat', balance}               another call paid this reference out before: nothing
--                                     changed; the balance now, cents
--   {'conflict', balance}             the reference was used with another amount: nothing changed
--   {'insufficient_funds', balance}   the balance is below the amount: nothing moved (the
--                                     answer kept in KEYS[6])
local merchant = ARGV[9] == 'merchant'
if not merchant and ARGV[9] ~= 'wallet' then
  return redis.error_reply('ERR hongbao: withdraw: owner is neither wallet nor merchant')
end
local amount = tonumber(ARGV[1])
if amount == nil or amount < 1 or amount ~= math.floor(amount) or amount > MAX_EXACT then
  return redis.error_reply('ERR hongbao: withdraw: amount is not a positive integer')
end
local keep_ms = tonumber(ARGV[4])
if keep_ms == nil or keep_ms < 1 then
  return redis.error_reply('ERR hongbao: withdraw: keep_ms must be positive')
end
local refused = refusal_read(KEYS[6])
if refused then
  return refused
end
local fingerprint = int(amount)
local prev = redis.call('HGET', KEYS[3], ARGV[3])
local balance = tonumber(redis.call('HGET', KEYS[1], 'balance') or '0')
if prev then
  local first, call, first_balance = money_record_read(prev)
  if first ~= fingerprint then
    return {'conflict', int(balance)}
  end
  if call == ARGV[7] then
    return {'applied', first_balance}
  end
  return {'repeat', int(balance)}
end
if balance < amount then
  return refusal_add(KEYS[6], 'insufficient_funds', balance, tonumber(ARGV[8]))
end

local now = now_ms()
balance = redis.call('HINCRBY', KEYS[1], 'balance', int(-amount))
if merchant then
  redis.call('HINCRBY', KEYS[1], 'withdrawn', int(amount))
end
ledger_push(KEYS[2], KEYS[1], 'withdrawal|' .. int(-amount) .. '|' .. int(now) .. '|' .. ARGV[2],
  tonumber(ARGV[5]))
journal_add(KEYS[5], merchant and 'merchant_withdrawal' or 'withdrawal', ARGV[6], -amount,
  ARGV[2], now, balance)
redis.call('HSET', KEYS[3], ARGV[3], money_record(fingerprint, ARGV[7], balance))
redis.call('ZADD', KEYS[4], forget_score(now, keep_ms), ARGV[3])
prune_records(KEYS[3], KEYS[4], now)
return {'applied', balance}
