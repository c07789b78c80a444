-- wallet_credit.lua: credit a wallet exactly once per transfer id (deposits, claim credits).
-- Prepended with records.lua (int, now_ms, prune_records, forget_score, MAX_EXACT),
-- history.lua, journal.lua (journal_add: one journal entry per credit applied, none for a
-- repeat) and ledger.lua (ledger_push): a claim credit adds the grabber's "received" history entry in the same script,
-- so the entry is written exactly when the money arrives, once per transfer id however often
-- the claim is re-driven.
--
-- helpers: records.lua history.lua journal.lua ledger.lua
-- acknowledged: WAIT for REDIS_WAIT_REPLICAS replicas before the answer
-- redis users: app
-- KEYS[1] wallet: wallet hash (field `balance`, cents)
-- KEYS[2] ledger: ledger list
-- KEYS[3] records: idempotency records hash (record id -> fingerprint, records.lua: money_record)
-- KEYS[4] records_forget: idempotency "forget after" sorted set (record id -> Unix ms, +inf =
--         pinned)
-- KEYS[5] received: the wallet owner's "received" history list
-- KEYS[6] sent: their "sent" list (pruned here)
-- KEYS[7] history_totals: their history totals hash
-- KEYS[8] journal: the money journal of the wallet's tag (journal.lua; one entry per credit
--         applied, of kind ARGV[3])
-- KEYS[9] call_answer: a deposit's refusal, `<wallet>:call:<call id>` (records.lua:
--          refusal_add); a claim credit's: any key of the slot, never touched
-- ARGV[1] amount_cents (i64): the credit, cents (> 0)
-- ARGV[2] kind: ledger kind (and journal kind: deposit or claim_credit)
-- ARGV[3] reference: ledger reference
-- ARGV[4] transfer_id: the record id (`dep:<reference>` or `claim:<packet id>`)
-- ARGV[5] fingerprint: what must match when the transfer id is seen again
-- ARGV[6] keep_ms (u64): keep the record this many ms (0 = pinned until transfer_release.lua
--         un-pins it)
-- ARGV[7] ledger_cap (u32): ledger length cap (entries)
-- ARGV[8] balance_limit_cents (i64): balance limit in cents (0 = only the MAX_EXACT bound)
-- ARGV[9] history_entry: the "received" history member of a claim credit (its cents must
--         equal ARGV[1]), '' for a credit that is not history (a deposit)
-- ARGV[10] history_retention_ms (u64): history retention, ms
-- ARGV[11] user_id: the wallet's owner (the journal entry's user)
-- ARGV[12] call: a deposit's call id (16 hex digits), kept in the record it writes (records.lua:
--          money_record): its re-run, at any later moment, answers its first 'applied'; ''
--          for a claim credit (re-driven by its packet's claim, which reads 'repeat')
-- ARGV[13] call_keep_ms (u64): how long a deposit's refusal is kept (KEYS[9]'s TTL), ms (> 0)
-- Returns one of:
--   {'applied', balance}         credited now
--   {'repeat', balance}          another call credited this transfer before: nothing changed;
--                                the balance now, cents
--   {'conflict', balance}        the transfer id was used with a different fingerprint: nothing changed
--   {'balance_limit', balance}   the credit would take the balance over ARGV[8]: nothing moved (a
--                                deposit's answer kept in KEYS[9])
if ARGV[12] ~= '' then
  local refused = refusal_read(KEYS[9])
  if refused then
    return refused
  end
end
local prev = redis.call('HGET', KEYS[3], ARGV[4])
local balance = tonumber(redis.call('HGET', KEYS[1], 'balance') or '0')
if prev then
  local first, call, first_balance = money_record_read(prev)
  if first ~= ARGV[5] then
    return {'conflict', balance}
  end
  if ARGV[12] ~= '' and call == ARGV[12] then
    return {'applied', first_balance}
  end
  return {'repeat', balance}
end
local amount = tonumber(ARGV[1])
if amount == nil or amount < 1 or amount ~= math.floor(amount) then
  return redis.error_reply('ERR hongbao: wallet_credit: amount is not a positive integer')
end
local limit = tonumber(ARGV[8])
if limit > 0 and balance + amount > limit then
  if ARGV[12] ~= '' then
    return refusal_add(KEYS[9], 'balance_limit', balance, tonumber(ARGV[13]))
  end
  return {'balance_limit', balance}
end
if balance + amount > MAX_EXACT then
  return redis.error_reply('ERR hongbao: wallet_credit: balance would exceed 2^53 - 1 cents')
end
local entry = ARGV[9]
if entry ~= '' then
  local year, cents = history_fields(entry)
  if not year or cents ~= amount then
    return redis.error_reply('ERR hongbao: wallet_credit: bad history entry')
  end
end

local now = now_ms()
balance = redis.call('HINCRBY', KEYS[1], 'balance', int(amount))
ledger_push(KEYS[2], KEYS[1], ARGV[2] .. '|' .. int(amount) .. '|' .. int(now) .. '|' .. ARGV[3],
  tonumber(ARGV[7]))
journal_add(KEYS[8], ARGV[2], ARGV[11], amount, ARGV[3], now, balance)
redis.call('HSET', KEYS[3], ARGV[4], money_record(ARGV[5], ARGV[12], balance))
redis.call('ZADD', KEYS[4], forget_score(now, tonumber(ARGV[6])), ARGV[4])
if entry ~= '' then
  history_add(KEYS[5], KEYS[7], 'received', entry)
  history_keep(KEYS[6], KEYS[5], KEYS[7], tonumber(ARGV[10]))
  local cutoff = now - tonumber(ARGV[10])
  history_prune(KEYS[5], KEYS[7], 'received', cutoff)
  history_prune(KEYS[6], KEYS[7], 'sent', cutoff)
end
prune_records(KEYS[3], KEYS[4], now)
return {'applied', balance}
