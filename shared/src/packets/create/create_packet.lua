-- create_packet.lua: debit the sender's wallet and create a red packet, atomically.
-- Prepended with records.lua (int, now_ms, prune_records, forget_score, MAX_EXACT),
-- quota.lua (rl_check, rl_count: the creates-per-minute and per-day quotas) and history.lua (the sender's
-- "sent" list, written here with the debit it records), journal.lua (journal_add) and
-- ledger.lua (ledger_push: the debit's ledger item).
--
-- All keys share the sender's hash tag, so this runs in one hash slot on a cluster.
-- helpers: records.lua quota.lua history.lua journal.lua ledger.lua packet.lua
-- acknowledged: WAIT for REDIS_WAIT_REPLICAS replicas before the answer
-- redis users: app
-- KEYS[1] wallet: sender wallet hash (field `balance`, integer cents)
-- KEYS[2] ledger: sender wallet ledger list (newest first)
-- KEYS[3] records: sender's idempotency records hash (record id -> "<fingerprint>\n<packet_id>")
-- KEYS[4] records_forget: sender's idempotency "forget after" set (record id -> Unix ms)
-- KEYS[5] meta: packet meta hash
-- KEYS[6] shares: packet share list (un-grabbed share amounts in cents, popped from the left)
-- KEYS[7] creates: the sender's packets created in the open quota window (string counter, TTL)
-- KEYS[8] recipients: the packet's recipients set (a targeted packet only)
-- KEYS[9] sent: the sender's "sent" history list
-- KEYS[10] received: the sender's "received" history list (pruned here too)
-- KEYS[11] history_totals: the sender's history totals hash
-- KEYS[12] journal: the money journal of the sender's tag (journal.lua; one packet_debit entry)
-- KEYS[13] open_packets: the sender's open packets (sorted set, packet id -> expires_at ms;
--          entries past it pruned here; written only while ARGV[28] > 0; expires with its
--          latest entry)
-- KEYS[14] creates_day: the sender's packets created in the open day window (string counter,
--          TTL)
-- ARGV[1] packet_id: the new packet's id
-- ARGV[2] sender_id: the sender's user id
-- ARGV[3] total_cents (i64): the packet's total, cents
-- ARGV[4] count (u32): the number of shares
-- ARGV[5] mode: 'lucky' or 'fixed'
-- ARGV[6] split: 'double_mean' or 'line_cut' for a lucky packet, '' for a fixed one
-- ARGV[7] greeting: the greeting, '' for none
-- ARGV[8] expires_in_secs (u64): the packet expires this many seconds after its opening
-- ARGV[9] fingerprint: the request's fingerprint (idempotency): "v2:<sha256 hex>"
-- ARGV[10] record_id: record id `create:<Idempotency-Key>`, or '' for a request without the
--          header
-- ARGV[11] record_keep_ms (u64): how long the record is kept, ms (> 0)
-- ARGV[12] ledger_cap (u32): ledger length cap (entries)
-- ARGV[13] packets_per_window (u32): packets a sender may create per window (0: no limit)
-- ARGV[14] window_ms (u64): the quota window, ms
-- ARGV[15] recipient_ids: a targeted packet's recipients joined by '\n' (user ids hold no
--          control character), '' for anyone
-- ARGV[16] history_retention_ms (u64): history retention, ms
-- ARGV[17] year_bounds: business-year bounds (history_year)
-- ARGV[18] indexed_at_ms (i64): Redis TIME (Unix ms) of the reclaim index's node when due_add.lua
--          indexed packet_id; the call creates nothing once this node's TIME is past it by
--          ARGV[19] (a late delivery: reclaim-cron may drop an entry whose packet does not
--          exist a minute after its due time, so a packet created later would never be refunded)
-- ARGV[19] delivery_window_ms (i64): the delivery window, ms (store::reclaim::CREATE_WINDOW_MS)
-- ARGV[20] opens_in_secs (u64): grabs open this many seconds after Redis TIME (0: at once); the
--          money is debited now
-- ARGV[21] cover: the cover id, '' for none
-- ARGV[22] salt: the fairness receipt's salt (64 hex digits; secret while the packet is open)
-- ARGV[23] commitment: SHA-256 hex of "hongbao-shares-v1:<salt>:<c1>,...,<cn>" over the share
--          amounts below, in order (domain::packets::receipt)
-- ARGV[24] password: a password packet's verifier (HMAC-SHA256 hex,
--          domain::packets::password), '' for none; never returned
-- ARGV[25] draw_entry_ms: a draw packet's entry window, ms from its opening (draw_at =
--          opens_at + this; lua/draw_run.lua), '' for a first-come-first-served packet
-- ARGV[26] draw_seed: a draw packet's seed, 64 hex digits (secret until the draw), else ''
-- ARGV[27] draw_commitment: SHA-256 hex of "hongbao-draw-v1:<seed>" (draws::rules), else ''
-- ARGV[28] max_open_packets (u32): packets the sender may have open at once (created, neither
--          expired nor cancelled; cancel.lua removes its entry), 0: no bound
-- ARGV[29] packets_per_day (u32): packets a sender may create per day window (0: no limit)
-- ARGV[30] day_window_ms (u64): the day window, ms
-- ARGV[31..30+count] share_amounts (&[i64]): the share amounts (cents), count of them, in share-id
--          order (grabs pop them from the left)
--
-- Any call may run twice (a cluster client re-sends a command whose reply was lost, a proxy
-- delivers it late): a run that finds the packet packet_id already made by this sender with
-- this total, count and mode is this call run again and answers {'created', packet_id} as the
-- first run did, writing nothing (packet ids hold 80 random bits, drawn per call).
-- Every check runs before the first write. Returns one of:
--   {'created', packet_id}             created now, or by an earlier run of this same call
--   {'repeat', packet_id}              same idempotency key and same request: nothing changed
--   {'idempotency_key_reused'}         same idempotency key, different request: nothing changed
--   {'insufficient_funds', balance}    nothing changed
--   {'id_taken'}                       packet id belongs to another packet (retry with a new id)
--   {'late'}                           delivered after its window (ARGV[18], ARGV[19]): nothing
--                                      changed
--   {'rate_limited', wait_ms, window}  the sender's quota of creates per `window` ('minute' or
--                                      'day') is used up: nothing changed (a repeat of an
--                                      earlier create is answered before this)
--   {'too_many_open', wait_ms}         the sender has ARGV[28] packets open; the first of them
--                                      expires in wait_ms: nothing changed (a repeat is
--                                      answered before this)
local total = tonumber(ARGV[3])
local count = tonumber(ARGV[4])
local record_id = ARGV[10]
local fingerprint = ARGV[9]
local now = now_ms()

local made = redis.call('HMGET', KEYS[5], 'sender_id', 'total_cents', 'count', 'mode')
if made[1] then
  if made[1] == ARGV[2] and tonumber(made[2]) == total and tonumber(made[3]) == count
      and made[4] == ARGV[5] then
    return {'created', ARGV[1]}
  end
  return {'id_taken'}
end
if now > tonumber(ARGV[18]) + tonumber(ARGV[19]) then
  return {'late'}
end

if record_id ~= '' then
  local prev = redis.call('HGET', KEYS[3], record_id)
  local forget_at = prev and tonumber(redis.call('ZSCORE', KEYS[4], record_id))
  if forget_at and forget_at <= now then
    -- Older than HONGBAO_IDEMPOTENCY_TTL_SECS but not yet pruned: the key is free again (its
    -- packet may be gone); this request overwrites the record.
    prev = nil
  end
  if prev then
    local stored, packet_id = string.match(prev, '^(.-)\n(.*)$')
    if stored ~= fingerprint then
      return {'idempotency_key_reused'}
    end
    return {'repeat', packet_id}
  end
end

local recipients = {}
for id in string.gmatch(ARGV[15], '[^\n]+') do
  recipients[#recipients + 1] = id
end
if #recipients > 0 and #recipients < count then
  return redis.error_reply('ERR hongbao: create_packet: fewer recipients than shares')
end
if #ARGV - 30 ~= count then
  return redis.error_reply('ERR hongbao: create_packet: share list length does not match count')
end
if ARGV[25] ~= '' and not (tonumber(ARGV[25]) and #ARGV[26] == 64 and #ARGV[27] == 64
    and tonumber(ARGV[25]) < tonumber(ARGV[8]) * 1000) then
  return redis.error_reply('ERR hongbao: create_packet: a draw needs its entry window within ' ..
    'the packet\'s life, its seed and its commitment')
end
local sum = 0
for i = 31, #ARGV do
  local amount = tonumber(ARGV[i])
  if amount == nil or amount < 1 or amount ~= math.floor(amount) then
    return redis.error_reply('ERR hongbao: create_packet: share below one cent or not an integer')
  end
  sum = sum + amount
end
if total == nil or sum ~= total or total > MAX_EXACT then
  return redis.error_reply('ERR hongbao: create_packet: shares do not sum to the total')
end

local quota, window = tonumber(ARGV[13]), tonumber(ARGV[14])
local wait, used = rl_check(KEYS[7], quota, 1, window)
if wait > 0 then
  return {'rate_limited', wait, 'minute'}
end
local day_quota, day_window = tonumber(ARGV[29]), tonumber(ARGV[30])
local day_wait, day_used = rl_check(KEYS[14], day_quota, 1, day_window)
if day_wait > 0 then
  return {'rate_limited', day_wait, 'day'}
end

-- Open packets: one ZCOUNT (the set holds at most ARGV[28] entries past now).
local max_open = tonumber(ARGV[28])
if not max_open then
  return redis.error_reply('ERR hongbao: create_packet: max_open_packets is not a number')
end
if max_open > 0 and redis.call('ZCOUNT', KEYS[13], '(' .. int(now), '+inf') >= max_open then
  local first = redis.call('ZRANGEBYSCORE', KEYS[13], '(' .. int(now), '+inf', 'WITHSCORES',
    'LIMIT', 0, 1)
  return {'too_many_open', math.max(1, tonumber(first[2]) - now)}
end

local balance = tonumber(redis.call('HGET', KEYS[1], 'balance') or '0')
if balance < total then
  return {'insufficient_funds', balance}
end

local year = history_year(now, ARGV[17])
if not year or now >= 1e13 then
  return redis.error_reply('ERR hongbao: create_packet: Redis TIME is outside the business-year bounds')
end
local opens_in = tonumber(ARGV[20])
local opens_at = now + opens_in * 1000
local expires_at = opens_at + tonumber(ARGV[8]) * 1000

local after = redis.call('HINCRBY', KEYS[1], 'balance', int(-total))
ledger_push(KEYS[2], KEYS[1], 'packet_debit|' .. int(-total) .. '|' .. int(now) .. '|' .. ARGV[1],
  tonumber(ARGV[12]))
journal_add(KEYS[12], 'packet_debit', ARGV[2], -total, ARGV[1], now, after)

packet_write(KEYS[5], {
  id = ARGV[1], total = total, count = count, mode = ARGV[5], split = ARGV[6],
  greeting = ARGV[7], now = now, expires_at = expires_at, salt = ARGV[22], commitment = ARGV[23],
}, {
  'sender_id', ARGV[2],
  -- A plain packet opens at creation and has no cover, draw, password or recipients.
  'opens_at', opens_in > 0 and int(opens_at) or '',
  'cover', ARGV[21],
  'draw_at', ARGV[25] ~= '' and int(opens_at + tonumber(ARGV[25])) or '',
  'draw_seed', ARGV[25] ~= '' and ARGV[26] or '',
  'draw_commitment', ARGV[25] ~= '' and ARGV[27] or '',
  'password', ARGV[24],
  'recipients', #recipients > 0 and #recipients or '',
})
if #recipients > 0 then
  redis.call('SADD', KEYS[8], unpack(recipients))
end
shares_push(KEYS[6], 31)

if record_id ~= '' then
  redis.call('HSET', KEYS[3], record_id, fingerprint .. '\n' .. ARGV[1])
  redis.call('ZADD', KEYS[4], forget_score(now, tonumber(ARGV[11])), record_id)
end
-- The mode field carries ';<opens_at>;<cover>;<flags>' when one is set
-- (domain::history::entries; flag 'p': a password packet).
local mode_field = ARGV[5]
if opens_in > 0 or ARGV[21] ~= '' or ARGV[24] ~= '' then
  mode_field = mode_field .. ';' .. (opens_in > 0 and int(opens_at) or '') .. ';' .. ARGV[21] ..
    ';' .. (ARGV[24] ~= '' and 'p' or '')
end
history_add(KEYS[9], KEYS[11], 'sent', history_prefix(now, ARGV[1]) .. ':' .. year .. '|' ..
  int(total) .. '|' .. int(count) .. '|' .. mode_field .. '|' .. int(expires_at) .. '||' .. ARGV[7])
history_keep(KEYS[9], KEYS[10], KEYS[11], tonumber(ARGV[16]))
local cutoff = now - tonumber(ARGV[16])
history_prune(KEYS[9], KEYS[11], 'sent', cutoff)
history_prune(KEYS[10], KEYS[11], 'received', cutoff)
prune_records(KEYS[3], KEYS[4], now)
rl_count(KEYS[7], quota, used, 1, window)
rl_count(KEYS[14], day_quota, day_used, 1, day_window)
if max_open > 0 then
  -- Every entry was open when it was added and at most ARGV[28] are open at any time, so this
  -- prunes at most ARGV[28] entries.
  redis.call('ZREMRANGEBYSCORE', KEYS[13], '-inf', int(now))
  redis.call('ZADD', KEYS[13], int(expires_at), ARGV[1])
  local last = redis.call('ZRANGE', KEYS[13], -1, -1, 'WITHSCORES')
  redis.call('PEXPIREAT', KEYS[13], last[2])
end
return {'created', ARGV[1]}
