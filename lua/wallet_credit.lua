-- wallet_credit.lua: credit a wallet exactly once per transfer id (deposits, claim credits).
--
-- KEYS[1] wallet hash (field `balance`, cents)   KEYS[2] ledger list
-- KEYS[3] transfer record (string: the request fingerprint; its existence means "applied")
-- ARGV[1] amount_cents (> 0)   ARGV[2] ledger kind   ARGV[3] reference
-- ARGV[4] transfer record TTL in seconds (0 = keep)   ARGV[5] fingerprint
-- ARGV[6] ledger length cap
-- Returns one of:
--   {'applied', balance}    credited now
--   {'repeat', balance}     this transfer was credited before: nothing changed
--   {'conflict', balance}   the transfer id was used with a different fingerprint: nothing changed
local prev = redis.call('GET', KEYS[3])
if prev then
  local balance = tonumber(redis.call('HGET', KEYS[1], 'balance') or '0')
  if prev ~= ARGV[5] then
    return {'conflict', balance}
  end
  return {'repeat', balance}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local balance = redis.call('HINCRBY', KEYS[1], 'balance', ARGV[1])
redis.call('LPUSH', KEYS[2], ARGV[2] .. '|' .. ARGV[1] .. '|' .. now .. '|' .. ARGV[3])
redis.call('LTRIM', KEYS[2], 0, tonumber(ARGV[6]) - 1)
if tonumber(ARGV[4]) > 0 then
  redis.call('SET', KEYS[3], ARGV[5], 'EX', ARGV[4])
else
  redis.call('SET', KEYS[3], ARGV[5])
end
return {'applied', balance}
