-- settle.lua: refund an expired red packet to its sender, exactly once.
--
-- The sender's wallet shares the packet's hash tag, so the refund is atomic with settlement.
-- KEYS[1] packet meta   KEYS[2] share list   KEYS[3] grabs hash   KEYS[4] grab order list
-- KEYS[5] claims hash   KEYS[6] sender wallet hash   KEYS[7] sender ledger list
-- ARGV[1] packet id   ARGV[2] retention after settlement (seconds)   ARGV[3] ledger length cap
--
-- The refund is total - claimed: the un-grabbed shares plus the grabbed-but-unclaimed ones.
-- Returns one of:
--   {'missing'}                       no such packet (a phantom index entry, or long gone)
--   {'not_due', expires_at_ms}        Redis TIME is before expires_at: nothing changed
--   {'settled', refund_cents, settled_now}   settled (settled_now = 1 if by this call, else 0);
--                                            keys now expire after ARGV[2] s
--   {'pending', refund_cents, settled_now, user1, amount1, user2, amount2, ...}
--        settled, but these claims still await their wallet credit; re-drive them, then call
--        this script again (keys keep no TTL until no claim is pending)
local status = redis.call('HGET', KEYS[1], 'status')
if not status then
  return {'missing'}
end
local refund = tonumber(redis.call('HGET', KEYS[1], 'refunded_cents'))
local settled_now = 0
if status ~= 'settled' then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local expires_at = tonumber(redis.call('HGET', KEYS[1], 'expires_at'))
  if now < expires_at then
    return {'not_due', expires_at}
  end
  local total = tonumber(redis.call('HGET', KEYS[1], 'total_cents'))
  local claimed = tonumber(redis.call('HGET', KEYS[1], 'claimed_cents'))
  refund = total - claimed
  if refund > 0 then
    redis.call('HINCRBY', KEYS[6], 'balance', refund)
    redis.call('LPUSH', KEYS[7], 'refund_credit|' .. refund .. '|' .. now .. '|' .. ARGV[1])
    redis.call('LTRIM', KEYS[7], 0, tonumber(ARGV[3]) - 1)
  end
  redis.call('HSET', KEYS[1], 'status', 'settled', 'refunded_cents', refund, 'settled_at', now)
  redis.call('DEL', KEYS[2])
  settled_now = 1
end

local pending = {'pending', refund, settled_now}
local claims = redis.call('HGETALL', KEYS[5])
for i = 1, #claims, 2 do
  if string.sub(claims[i + 1], 1, 8) == 'pending:' then
    local share = redis.call('HGET', KEYS[3], claims[i])
    pending[#pending + 1] = claims[i]
    pending[#pending + 1] = tonumber(string.match(share, '^%d+:(%d+):'))
  end
end
if #pending > 3 then
  return pending
end
local ttl = tonumber(ARGV[2])
for i = 1, 5 do
  redis.call('EXPIRE', KEYS[i], ttl)
end
return {'settled', refund, settled_now}
