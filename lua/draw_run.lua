-- draw_run.lua: one chunk of a draw packet's draw (domain::draws): once Redis TIME has reached
-- the packet's draw_at, the entrants with the smallest tickets get the shares, the smallest
-- ticket share 1, at most ARGV[1] winners per call, so that no call holds the server long
-- (a draw of 10,000 winners is forty calls of 250: store::packets::draw::DRAW_CHUNK).
--
-- The entrants are the tickets sorted set (score 0, member "<ticket>:<user_id>", the ticket
-- 64 lowercase hex digits: members sort by ticket). The first call fixes the draw: it records
-- draw_entrants (ZCARD) and draw_winners = min(count, entrants), after which no entry is
-- taken (grab.lua). Each call assigns the next winners from draw_done: it pops their shares
-- from the share list in share-id order and writes each winner's share record
-- "<share_id>:<amount>:<draw_at>:drawn" in the grabs hash, appends them to the order list and
-- keeps best_user and best_cents in meta (ties: the earlier share), as a grab would have; the last one
-- records draw_threshold (the largest winning ticket) and drawn_at (Redis TIME). Shares
-- nobody won stay in the list and are refunded at expiry, as un-grabbed shares are.
--
-- The call that completes the draw journals it (journal.lua, prepended after records.lua):
-- a draw_run entry of the packet's sender, amount and balance 0 (it moves no money),
-- reference the packet id, extra "<entrants>|<winners>|<seed>|<commitment>|<threshold>"
-- (threshold '' when nobody entered), which ledger-export publishes as DrawRun.
--
-- Any call may run twice (a lost reply re-sent): the progress lives in the meta hash, so a
-- call run again assigns the next chunk or answers 'drawn'; no winner is assigned twice.
--
-- helpers: records.lua journal.lua
-- acknowledged: WAIT for REDIS_WAIT_REPLICAS replicas before the answer
-- redis users: app
-- KEYS[1] meta: packet meta hash
-- KEYS[2] shares: share list (un-grabbed amounts, cents)
-- KEYS[3] grabs: grabs hash (user -> share record)
-- KEYS[4] tickets: the packet's entrants (sorted set, see above)
-- KEYS[5] journal: the money journal of the packet's tag (the draw_run entry)
-- KEYS[6] order: the packet's grab order list (each winner appended in share-id order, as a
--         grab would have)
-- ARGV[1] chunk (u32): the most winners this call assigns (>= 1)
-- Returns one of:
--   'not_found'
--   'not_a_draw'                  the packet has no draw
--   'cancelled'                   cancelled before its draw (settled since or not): nobody
--                                 wins, nothing written
--   'not_due:<draw_at_ms>'        Redis TIME is before draw_at; nothing written
--   'drawing:<done>:<winners>'    winners assigned so far, of how many; call again
--   'drawn:<winners>:<entrants>'  the draw is complete (by this call or before)
local meta = redis.call('HMGET', KEYS[1], 'status', 'draw_at', 'count', 'grabbed_count',
  'grabbed_cents', 'draw_winners', 'draw_done', 'drawn_at', 'draw_entrants', 'sender_id',
  'packet_id', 'draw_seed', 'draw_commitment', 'draw_threshold', 'cancelled_at', 'best_cents',
  'best_user')
if not meta[1] then
  return 'not_found'
end
if not meta[2] then
  return 'not_a_draw'
end
if meta[8] then
  return 'drawn:' .. meta[6] .. ':' .. meta[9]
end
-- Cancelled, also once settled since (settle.lua keeps cancelled_at): never drawn.
if meta[1] == 'cancelled' or meta[15] then
  return 'cancelled'
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local draw_at = tonumber(meta[2])
if now < draw_at then
  return 'not_due:' .. meta[2]
end
local chunk = tonumber(ARGV[1])
if not chunk or chunk < 1 then
  return redis.error_reply('ERR hongbao: draw_run: chunk must be at least 1')
end

-- The first call fixes the entrants and the number of winners (written below).
local winners, done, entrants = tonumber(meta[6]), tonumber(meta[7]), tonumber(meta[9])
local first = not winners
if first then
  entrants = redis.call('ZCARD', KEYS[4])
  winners = math.min(tonumber(meta[3]), entrants)
  done = 0
end
local upto = math.min(done + chunk, winners)
-- Every check before the first write: this chunk's entrants are well formed and the share
-- list holds a share for each.
local members = {}
if upto > done then
  members = redis.call('ZRANGE', KEYS[4], done, upto - 1)
end
if #members ~= upto - done or redis.call('LLEN', KEYS[2]) < #members then
  return redis.error_reply('ERR hongbao: draw_run: fewer entrants or shares than winners')
end
local parsed = {}
for i, member in ipairs(members) do
  local ticket, user = string.match(member, '^(%x+):(.+)$')
  if not ticket or #ticket ~= 64 then
    return redis.error_reply('ERR hongbao: draw_run: a malformed entrant')
  end
  parsed[i] = {ticket, user}
end

-- Writes start here.
if first then
  redis.call('HSET', KEYS[1], 'draw_entrants', string.format('%d', entrants),
    'draw_winners', string.format('%d', winners))
end
local grabbed, cents = tonumber(meta[4]), tonumber(meta[5])
local threshold = meta[14] or ''
local best_cents, best_user = tonumber(meta[16]), meta[17]
for i, entrant in ipairs(parsed) do
  local amount = redis.call('LPOP', KEYS[2])
  local share_id = done + i
  redis.call('HSET', KEYS[3], entrant[2],
    string.format('%d:%s:%d:drawn', share_id, amount, draw_at))
  redis.call('RPUSH', KEYS[6], entrant[2])
  if not best_cents or tonumber(amount) > best_cents then
    best_cents, best_user = tonumber(amount), entrant[2]
  end
  grabbed = grabbed + 1
  cents = cents + tonumber(amount)
  if share_id == winners then
    redis.call('HSET', KEYS[1], 'draw_threshold', entrant[1])
    threshold = entrant[1]
  end
end
redis.call('HSET', KEYS[1], 'draw_done', string.format('%d', upto),
  'grabbed_count', string.format('%d', grabbed), 'grabbed_cents', string.format('%d', cents))
if best_user then
  redis.call('HSET', KEYS[1], 'best_user', best_user, 'best_cents', string.format('%d', best_cents))
end
if upto < winners then
  return string.format('drawing:%d:%d', upto, winners)
end
redis.call('HSET', KEYS[1], 'drawn_at', string.format('%d', now))
journal_add(KEYS[5], 'draw_run', meta[10], 0, meta[11], now, 0,
  string.format('%d|%d|%s|%s|%s', entrants, winners, meta[12], meta[13], threshold))
return string.format('drawn:%d:%d', winners, entrants)
