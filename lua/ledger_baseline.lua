-- ledger_baseline.lua: the one-time baseline of a ledger trimmed before `ledger_trimmed_cents`
-- existed (reconcile-cron). Such a ledger lost the cents of the items trimmed off its end, so
-- `balance = ledger_trimmed_cents + the sum of the ledger's items` (ledger.lua) could never
-- hold again and its account would be reported for ever. Its baseline sets
-- `ledger_trimmed_cents` to `balance - the sum of the items` and journals it (amount 0; extra
-- the cents taken as trimmed), so the cents it accepts are on the feed for review; from then on
-- every push keeps the field, and any later drift is reported. Prepended with records.lua
-- (int, now_ms, call_answer_read, call_answer_add) and journal.lua (journal_add).
--
-- Only a ledger at its cap (a trimmed one's length) without the field has a baseline: a ledger
-- below its cap was never trimmed, and one with the field is kept by ledger.lua. Nothing else is
-- written; no money moves.
--
-- helpers: records.lua journal.lua
-- acknowledged: WAIT for REDIS_WAIT_REPLICAS replicas before the answer
-- redis users: app
-- KEYS[1] holder: the wallet's or the merchant's hash (`balance`, cents)
-- KEYS[2] ledger: its ledger list
-- KEYS[3] journal: the money journal of its tag (one ledger_baseline or
--         merchant_ledger_baseline entry)
-- KEYS[4] call_answer: this call's answer, `<holder>:call:<call id>` (records.lua:
--         call_answer_add)
-- ARGV[1] holder_id: the wallet's owner or the merchant (the journal entry's user)
-- ARGV[2] kind: the journal entry's kind, 'ledger_baseline' or 'merchant_ledger_baseline'
-- ARGV[3] ledger_cap (u32): ledger length cap (entries)
-- ARGV[4] call_keep_ms (u64): how long KEYS[4] is kept (the re-send horizon), ms
--
-- Returns one of (the first two kept in KEYS[4]: a re-run answers its first run):
--   'baselined:<trimmed_cents>'   the field set now
--   'not_needed'                  the field exists, or the ledger is below its cap
local answered = call_answer_read(KEYS[4])
if answered then
  return answered
end
local keep = tonumber(ARGV[4])
local fields = redis.call('HMGET', KEYS[1], 'balance', 'ledger_trimmed_cents')
local cap = tonumber(ARGV[3])
if fields[2] or redis.call('LLEN', KEYS[2]) < cap then
  return call_answer_add(KEYS[4], 'not_needed', keep)
end
local balance = tonumber(fields[1] or '0')
if not balance then
  return redis.error_reply('ERR hongbao: ledger_baseline: balance is not an integer')
end
local sum = 0
for _, item in ipairs(redis.call('LRANGE', KEYS[2], 0, cap - 1)) do
  local cents = tonumber(string.match(item, '^[^|]*|(%-?%d+)|'))
  if not cents then
    return redis.error_reply('ERR hongbao: ledger_baseline: a ledger item without its cents')
  end
  sum = sum + cents
end
local trimmed = balance - sum
-- Writes start here.
redis.call('HSET', KEYS[1], 'ledger_trimmed_cents', int(trimmed))
journal_add(KEYS[3], ARGV[2], ARGV[1], 0, 'ledger', now_ms(), balance, int(trimmed))
return call_answer_add(KEYS[4], 'baselined:' .. int(trimmed), keep)
