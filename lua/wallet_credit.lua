-- wallet_credit.lua: credit a claimed share to the grabber's wallet exactly once per transfer
-- id (claim step 2; deposits are deposit.lua's). Prepended with records.lua (int, now_ms,
-- prune_records, forget_score, MAX_EXACT), history.lua, journal.lua (journal_add: one
-- claim_credit entry per credit applied, none for a repeat) and ledger.lua (ledger_push). The
-- grabber's "received" history entry is added in the same script, so it is written exactly
-- when the money arrives, once per transfer id however often the claim is re-driven. A claim
-- credit is never refused for the balance limit: the money already exists, and refusing it
-- would strand it.
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
-- KEYS[8] journal: the money journal of the wallet's tag (journal.lua; one claim_credit entry
--         per credit applied)
-- ARGV[1] amount_cents (i64): the credit, cents (> 0)
-- ARGV[2] reference: ledger reference (the packet id)
-- ARGV[3] transfer_id: the record id, `claim:<packet id>`
-- ARGV[4] fingerprint: what must match when the transfer id is seen again (the amount)
-- ARGV[5] keep_ms (u64): keep the record this many ms (0 = pinned until transfer_release.lua
--         un-pins it)
-- ARGV[6] ledger_cap (u32): ledger length cap (entries)
-- ARGV[7] history_entry: the "received" history member (its cents must equal ARGV[1])
-- ARGV[8] history_retention_ms (u64): history retention, ms
-- ARGV[9] user_id: the wallet's owner (the journal entry's user)
-- ARGV[10] call: the claim call's id (16 hex digits), kept in the record it writes
--          (records.lua: money_record): its re-run, at any later moment, answers its first
--          'applied'; '' for a re-drive without a call of its own (reclaim-cron's)
-- Returns one of:
--   {'applied', balance}         credited now
--   {'repeat', balance}          another call credited this transfer before (a re-driven
--                                claim): nothing changed; the balance now, cents
--   {'conflict', balance}        the transfer id was used with a different fingerprint:
--                                nothing changed
local prev = redis.call('HGET', KEYS[3], ARGV[3])
local balance = tonumber(redis.call('HGET', KEYS[1], 'balance') or '0')
if prev then
  local first, call, first_balance = money_record_read(prev)
  if first ~= ARGV[4] then
    return {'conflict', balance}
  end
  if ARGV[10] ~= '' and call == ARGV[10] then
    return {'applied', first_balance}
  end
  return {'repeat', balance}
end
local amount = tonumber(ARGV[1])
if amount == nil or amount < 1 or amount ~= math.floor(amount) then
  return redis.error_reply('ERR hongbao: wallet_credit: amount is not a positive integer')
end
if balance + amount > MAX_EXACT then
  return redis.error_reply('ERR hongbao: wallet_credit: balance would exceed 2^53 - 1 cents')
end
local entry = ARGV[7]
local year, cents = history_fields(entry)
if not year or cents ~= amount then
  return redis.error_reply('ERR hongbao: wallet_credit: bad history entry')
end

local now = now_ms()
balance = redis.call('HINCRBY', KEYS[1], 'balance', int(amount))
ledger_push(KEYS[2], KEYS[1], 'claim_credit|' .. int(amount) .. '|' .. int(now) .. '|' .. ARGV[2],
  tonumber(ARGV[6]))
journal_add(KEYS[8], 'claim_credit', ARGV[9], amount, ARGV[2], now, balance)
redis.call('HSET', KEYS[3], ARGV[3], money_record(ARGV[4], ARGV[10], balance))
redis.call('ZADD', KEYS[4], forget_score(now, tonumber(ARGV[5])), ARGV[3])
history_add(KEYS[5], KEYS[7], 'received', entry)
history_keep(KEYS[6], KEYS[5], KEYS[7], tonumber(ARGV[8]))
local cutoff = now - tonumber(ARGV[8])
history_prune(KEYS[5], KEYS[7], 'received', cutoff)
history_prune(KEYS[6], KEYS[7], 'sent', cutoff)
prune_records(KEYS[3], KEYS[4], now)
return {'applied', balance}
