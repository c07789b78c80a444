-- create_packet.lua: debit the sender's wallet and create a red packet, atomically.
--
-- All keys share the sender's hash tag, so this runs in one hash slot on a cluster.
-- KEYS[1] sender wallet hash        (field `balance`, integer cents)
-- KEYS[2] sender wallet ledger list (newest first)
-- KEYS[3] idempotency record        (string "<fingerprint>\n<packet_id>", expires after ARGV[10] s)
-- KEYS[4] packet meta hash
-- KEYS[5] packet share list         (un-grabbed share amounts in cents, popped from the left)
-- ARGV[1] packet id      ARGV[2] sender id    ARGV[3] total_cents   ARGV[4] count
-- ARGV[5] mode           ARGV[6] split        ARGV[7] greeting      ARGV[8] expires_in_secs
-- ARGV[9] request fingerprint (idempotency)   ARGV[10] idempotency TTL in seconds, 0 = no key
-- ARGV[11] ledger length cap                  ARGV[12..] the share amounts (cents), count of them
--
-- Returns one of:
--   {'created', packet_id}
--   {'repeat', packet_id}              same idempotency key and same request: nothing changed
--   {'idempotency_key_reused'}         same idempotency key, different request: nothing changed
--   {'insufficient_funds', balance}    nothing changed
--   {'id_taken'}                       packet id already exists (retry with a new id)
local total = tonumber(ARGV[3])
local count = tonumber(ARGV[4])
local idem_ttl = tonumber(ARGV[10])

if idem_ttl > 0 then
  local prev = redis.call('GET', KEYS[3])
  if prev then
    local fingerprint, packet_id = string.match(prev, '^(.-)\n(.*)$')
    if fingerprint ~= ARGV[9] then
      return {'idempotency_key_reused'}
    end
    return {'repeat', packet_id}
  end
end

if #ARGV - 11 ~= count then
  return redis.error_reply('ERR hongbao: create_packet: share list length does not match count')
end
local sum = 0
for i = 12, #ARGV do
  local amount = tonumber(ARGV[i])
  if amount == nil or amount < 1 then
    return redis.error_reply('ERR hongbao: create_packet: share below one cent')
  end
  sum = sum + amount
end
if sum ~= total then
  return redis.error_reply('ERR hongbao: create_packet: shares do not sum to the total')
end

local balance = tonumber(redis.call('HGET', KEYS[1], 'balance') or '0')
if balance < total then
  return {'insufficient_funds', balance}
end
if redis.call('EXISTS', KEYS[4]) == 1 then
  return {'id_taken'}
end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local expires_at = now + tonumber(ARGV[8]) * 1000

redis.call('HINCRBY', KEYS[1], 'balance', -total)
redis.call('LPUSH', KEYS[2], 'packet_debit|' .. (-total) .. '|' .. now .. '|' .. ARGV[1])
redis.call('LTRIM', KEYS[2], 0, tonumber(ARGV[11]) - 1)

redis.call('HSET', KEYS[4],
  'packet_id', ARGV[1], 'sender_id', ARGV[2], 'total_cents', total, 'count', count,
  'mode', ARGV[5], 'split', ARGV[6], 'greeting', ARGV[7],
  'created_at', now, 'expires_at', expires_at, 'status', 'open',
  'grabbed_count', 0, 'grabbed_cents', 0, 'claimed_cents', 0, 'refunded_cents', 0)

-- Push in chunks: unpack() of thousands of values would overflow Lua's C stack.
local i = 12
while i <= #ARGV do
  local last = math.min(i + 999, #ARGV)
  redis.call('RPUSH', KEYS[5], unpack(ARGV, i, last))
  i = last + 1
end

if idem_ttl > 0 then
  redis.call('SET', KEYS[3], ARGV[9] .. '\n' .. ARGV[1], 'EX', idem_ttl)
end
return {'created', ARGV[1]}
