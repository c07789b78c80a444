-- merchant_deposit.lua: pay money into a merchant's budget, exactly once per reference
-- (POST /merchants/{merchant_id}/deposits). Prepended with records.lua (int, now_ms,
-- prune_records, forget_score, MAX_EXACT), journal.lua (journal_add) and ledger.lua
-- (ledger_push).
--
-- All keys share the merchant's hash tag.
-- helpers: records.lua journal.lua ledger.lua
-- acknowledged: WAIT for REDIS_WAIT_REPLICAS replicas before the answer
-- redis users: app
-- KEYS[1] merchant: the merchant's hash (its books: `balance`, `deposited`, ... in cents;
--         domain::merchants::Books)
-- KEYS[2] ledger: the merchant's ledger list
-- KEYS[3] records: the merchant's idempotency records hash (record id -> money_record)
-- KEYS[4] records_forget: its "forget after" sorted set (record id -> Unix ms)
-- KEYS[5] journal: the money journal of the merchant's tag (one merchant_deposit entry)
-- KEYS[6] call_answer: this call's refusal, `<merchant>:call:<call id>` (records.lua:
--         refusal_add)
-- ARGV[1] amount_cents (i64): the deposit, cents (> 0)
-- ARGV[2] reference: the caller's reference (the ledger entry's reference)
-- ARGV[3] record_id: the idempotency record id, `dep:<reference>`
-- ARGV[4] keep_ms (u64): keep the record this many ms (> 0)
-- ARGV[5] ledger_cap (u32): ledger length cap (entries)
-- ARGV[6] balance_limit_cents (i64): the largest balance a deposit may produce, cents
-- ARGV[7] merchant_id: the merchant (the journal entry's user)
-- ARGV[8] call: this call's id (16 hex digits), kept in the record it writes (records.lua:
--         money_record): its re-run, at any later moment, answers its first 'applied'
-- ARGV[9] call_keep_ms (u64): how long a refusal's answer is kept (KEYS[6]'s TTL), ms (> 0)
--
-- The record's fingerprint is the amount: the same reference with the same amount is a
-- repeat (nothing credited twice), with another amount a conflict. The deposit moves
-- `balance` and `deposited` together, so the books close after it as before it. Every check
-- comes before the first write.
-- Returns one of:
--   {'applied', balance}          credited now; the balance after, cents
--   {'repeat', balance}           another call deposited this reference before: nothing
--                                 changed; the balance now, cents
--   {'conflict', balance}         the reference was used with another amount: nothing changed
--   {'balance_limit', balance}    the balance would pass ARGV[6]: nothing moved (the answer
--                                 kept in KEYS[6])
local amount = tonumber(ARGV[1])
if amount == nil or amount < 1 or amount ~= math.floor(amount) or amount > MAX_EXACT then
  return redis.error_reply('ERR hongbao: merchant_deposit: amount is not a positive integer')
end
local keep_ms = tonumber(ARGV[4])
if keep_ms == nil or keep_ms < 1 then
  return redis.error_reply('ERR hongbao: merchant_deposit: keep_ms must be positive')
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
  if call == ARGV[8] then
    return {'applied', first_balance}
  end
  return {'repeat', int(balance)}
end
if balance + amount > tonumber(ARGV[6]) then
  return refusal_add(KEYS[6], 'balance_limit', balance, tonumber(ARGV[9]))
end

local now = now_ms()
balance = redis.call('HINCRBY', KEYS[1], 'balance', int(amount))
redis.call('HINCRBY', KEYS[1], 'deposited', int(amount))
ledger_push(KEYS[2], KEYS[1], 'deposit|' .. int(amount) .. '|' .. int(now) .. '|' .. ARGV[2],
  tonumber(ARGV[5]))
journal_add(KEYS[5], 'merchant_deposit', ARGV[7], amount, ARGV[2], now, balance)
redis.call('HSET', KEYS[3], ARGV[3], money_record(fingerprint, ARGV[8], balance))
redis.call('ZADD', KEYS[4], forget_score(now, keep_ms), ARGV[3])
prune_records(KEYS[3], KEYS[4], now)
return {'applied', balance}
