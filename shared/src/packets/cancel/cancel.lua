-- cancel.lua: the sender cancels an open red packet: it stops taking grabs and its un-grabbed
-- shares go back to the sender's wallet at once, in this one step.
-- Prepended with records.lua (int, now_ms, MAX_EXACT), history.lua (history_prefix, history_replace) and
-- journal.lua (journal_add: a refund_credit entry and a packet_cancelled entry), then
-- ledger.lua (ledger_push: the refund's ledger item).
--
-- The sender's wallet shares the packet's hash tag (a packet id starts with it), so the refund
-- is atomic with the status change.
-- helpers: records.lua history.lua journal.lua ledger.lua
-- acknowledged: WAIT for REDIS_WAIT_REPLICAS replicas before the answer
-- redis users: app
-- KEYS[1] meta: packet meta hash
-- KEYS[2] wallet: the sender's wallet hash
-- KEYS[3] ledger: the sender's ledger list
-- KEYS[4] sent: the sender's "sent" history list: the packet's entry gets the refund and the
--         flag 'c'
-- KEYS[5] journal: the money journal of the sender's tag
-- KEYS[6] recipients: the packet's recipients set (deleted: no grab can come after a cancel)
-- KEYS[7] shares: the packet's share list (TTL'd when this cancel settles the packet)
-- KEYS[8] grabs: the packet's grabs hash (likewise)
-- KEYS[9] claims: the packet's claims hash (likewise)
-- KEYS[10] tickets: a draw packet's entrants (likewise; any key of the packet otherwise)
-- KEYS[11] order: the packet's grab order list (likewise)
-- KEYS[12] open_packets: the sender's open packets (create_packet.lua): the packet leaves it
-- ARGV[1] packet_id: the packet's id
-- ARGV[2] caller_id: the caller (only the sender may cancel)
-- ARGV[3] ledger_cap (u32): ledger length cap (entries)
-- ARGV[4] retention_secs (u64): how long a settled packet's keys are kept, seconds (> 0)
-- ARGV[5] call: this call's id (16 hex digits), kept in the meta hash as `cancel_call` by the
--         run that cancels, so a later run tells a re-run of that call (earlier 0, as its
--         first answer) from another call (earlier 1)
--
-- Shares already grabbed stay claimable until expires_at; settle.lua refunds the unclaimed
-- ones then (total - claimed - what this refunded). The share list is kept: the fairness
-- receipt's reveal reads the un-grabbed shares from it. The recipients set is deleted at once
-- (it only decides who may grab; a grabber still sees the packet by their grab). A packet
-- nobody grabbed holds nothing after the refund: this cancel settles it (status `settled`,
-- `settled_at`, a packet_settled entry, as settle.lua would at expires_at) and every key
-- gets the retention TTL now, so a sender who creates and cancels keeps only small, expiring
-- keys. Every check runs before the first write. A run that finds the packet cancelled (by this call or an earlier one) answers with
-- that cancel's figures and writes nothing, so a re-sent call answers as the first run did.
-- Returns one of:
--   {'not_found'}
--   {'forbidden'}                                the caller is not the sender; nothing written
--   {'not_cancellable', 'sold_out'|'expired'|'settled'}   nothing written
--   {'cancelled', refunded_cents, cancelled_at_ms, earlier}   cancelled by this call (earlier 0,
--                                                also when a re-run finds its own cancel) or by
--                                                another call before it (1; also a cancel made
--                                                before cancels kept their call)
--   {'draw_due'}                                 a draw packet past draw_at whose draw is not
--                                                complete: run it (draw_run.lua) and call again,
--                                                so its winners keep their shares; nothing
--                                                written
local meta = redis.call('HMGET', KEYS[1], 'status', 'sender_id', 'total_cents',
  'grabbed_cents', 'grabbed_count', 'count', 'expires_at', 'cancelled_at',
  'cancel_refunded_cents', 'created_at', 'refunded_cents', 'draw_at', 'drawn_at', 'cancel_call')
local status = meta[1]
if not status then
  return {'not_found'}
end
if meta[2] ~= ARGV[2] then
  return {'forbidden'}
end
if meta[8] then
  return {'cancelled', tonumber(meta[9]), tonumber(meta[8]), meta[14] == ARGV[5] and 0 or 1}
end
if status == 'settled' then
  return {'not_cancellable', 'settled'}
end
local retention = tonumber(ARGV[4])
if not retention or retention < 1 then
  return redis.error_reply('ERR hongbao: cancel: retention_secs must be positive')
end
local now = now_ms()
local total, grabbed_cents = tonumber(meta[3]), tonumber(meta[4])
local grabbed, count, expires_at = tonumber(meta[5]), tonumber(meta[6]), tonumber(meta[7])
if not (total and grabbed_cents and grabbed and count and expires_at) then
  return redis.error_reply('ERR hongbao: cancel: packet fields missing or not integers')
end
if now >= expires_at then
  return {'not_cancellable', 'expired'}
end
if meta[12] and not meta[13] and now >= tonumber(meta[12]) then
  return {'draw_due'}
end
if grabbed >= count then
  return {'not_cancellable', 'sold_out'}
end
local refund = total - grabbed_cents
if refund < 1 or tonumber(meta[11] or '0') ~= 0 then
  return redis.error_reply('ERR hongbao: cancel: un-grabbed shares do not add up')
end
local balance = tonumber(redis.call('HGET', KEYS[2], 'balance') or '0')
if balance + refund > MAX_EXACT then
  return redis.error_reply('ERR hongbao: cancel: balance would exceed 2^53 - 1 cents')
end
-- The sender's history entry of this packet: `...|<mode field>|<expires_at>|<refunded>|<greeting>`
-- (absent when pruned by the retention).
local sent, head, mode_field, mid, tail = nil, nil, nil, nil, nil
local created_at = tonumber(meta[10])
if created_at then
  local prefix = history_prefix(created_at, ARGV[1])
  sent = redis.call('ZRANGEBYLEX', KEYS[4], '[' .. prefix .. ':', '(' .. prefix .. ';',
    'LIMIT', 0, 1)[1]
  if sent then
    head, mode_field, mid, tail = string.match(sent, '^(%d+:%x+:%d+|%d+|%d+|)([^|]+)(|%d+|)%d*(|.*)$')
    if not head then
      return redis.error_reply('ERR hongbao: cancel: bad sent history entry')
    end
  end
end

-- Writes start here.
balance = redis.call('HINCRBY', KEYS[2], 'balance', int(refund))
ledger_push(KEYS[3], KEYS[2], 'refund_credit|' .. int(refund) .. '|' .. int(now) .. '|' .. ARGV[1],
  tonumber(ARGV[3]))
journal_add(KEYS[5], 'refund_credit', ARGV[2], refund, ARGV[1], now, balance)
journal_add(KEYS[5], 'packet_cancelled', ARGV[2], 0, ARGV[1], now, balance, int(refund))
redis.call('HSET', KEYS[1], 'status', 'cancelled', 'cancelled_at', int(now),
  'cancel_refunded_cents', int(refund), 'refunded_cents', int(refund), 'cancel_call', ARGV[5])
if sent then
  -- The flags come last in the mode field (`<mode>;<opens_at>;<cover>;<flags>`).
  if not string.find(mode_field, ';', 1, true) then
    mode_field = mode_field .. ';;;'
  end
  history_replace(KEYS[4], sent, head .. mode_field .. 'c' .. mid .. int(refund) .. tail)
end
redis.call('DEL', KEYS[6])
redis.call('ZREM', KEYS[12], ARGV[1])
if grabbed == 0 then
  -- Nothing left in the packet: settled now (settle.lua finds it settled and moves nothing).
  journal_add(KEYS[5], 'packet_settled', ARGV[2], 0, ARGV[1], now, balance, int(refund) .. '|0')
  redis.call('HSET', KEYS[1], 'status', 'settled', 'settled_at', int(now))
  for _, key in ipairs({KEYS[1], KEYS[7], KEYS[8], KEYS[9], KEYS[10], KEYS[11]}) do
    redis.call('EXPIRE', key, retention, 'NX')
  end
end
return {'cancelled', refund, now, 0}
