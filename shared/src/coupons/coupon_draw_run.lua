-- coupon_draw_run.lua: a draw campaign's draw (draws::rules), on pool 0, once Redis TIME has
-- reached draw_at: it fixes the entrants, the winners (the first min(codes, entrants) tickets
-- of the tickets sorted set, see coupon_draw_enter.lua) and the threshold (the largest winning
-- ticket) in one step, and journals it. It assigns no code: each winner's grab then takes one
-- (coupon_grab.lua, per_user 1), and the campaign holds at least as many codes as winners, so
-- every winner gets one, from whichever pool. One ZCARD and one ZRANGE of one member: O(log n)
-- whatever the number of entrants.
--
-- The codes (ARGV[1]) are the campaign's at the draw, summed over its pools by the function:
-- codes enter a pool only before the start (coupon_add_codes.lua), so every caller sums the
-- same.
-- The first run records its figures; a run after it (a racing request, or this call sent
-- again after a lost reply) answers them and writes nothing.
--
-- The run that draws appends a draw_run entry to pool 0's journal (journal.lua, prepended
-- after records.lua): user '' (a campaign's pools name no owner), amount and balance 0,
-- reference the campaign id, extra "<entrants>|<winners>|<seed>|<commitment>|<threshold>"
-- (threshold '' when nobody entered), which ledger-export publishes as DrawRun.
--
-- helpers: records.lua journal.lua
-- acknowledged: WAIT for REDIS_WAIT_REPLICAS replicas before the answer
-- redis users: app
-- KEYS[1] pool: pool 0's hash (draw_at, draw_seed, draw_commitment; the draw adds
--         draw_entrants, draw_winners, draw_threshold and drawn_at)
-- KEYS[2] tickets: the campaign's entrants (sorted set)
-- KEYS[3] journal: the journal of pool 0's tag (the draw_run entry)
-- ARGV[1] codes (u64): the campaign's codes (every pool's total), >= 0
-- ARGV[2] campaign_id: the campaign (the journal entry's reference)
-- Returns one of:
--   'not_found'                            no such pool
--   'not_due:<draw_at_ms>'                 Redis TIME is before draw_at; nothing written
--   'drawn:<winners>:<entrants>'           drawn by an earlier run; nothing written
--   'drawn_now:<winners>:<entrants>'       drawn by this run
local meta = redis.call('HMGET', KEYS[1], 'starts_at', 'draw_at', 'drawn_at', 'draw_winners',
  'draw_entrants', 'draw_seed', 'draw_commitment')
if not meta[1] then
  return 'not_found'
end
if not meta[2] then
  return redis.error_reply('ERR hongbao: coupon_draw_run: the campaign has no draw')
end
if meta[3] then
  return 'drawn:' .. meta[4] .. ':' .. meta[5]
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if now < tonumber(meta[2]) then
  return 'not_due:' .. meta[2]
end
local codes = tonumber(ARGV[1])
if not codes or codes < 0 or codes ~= math.floor(codes) then
  return redis.error_reply('ERR hongbao: coupon_draw_run: codes must be a whole number >= 0')
end
local entrants = redis.call('ZCARD', KEYS[2])
local winners = math.min(codes, entrants)
local threshold = ''
if winners > 0 then
  local last = redis.call('ZRANGE', KEYS[2], winners - 1, winners - 1)[1]
  threshold = string.match(last or '', '^(%x+):.+$')
  if not threshold or #threshold ~= 64 then
    return redis.error_reply('ERR hongbao: coupon_draw_run: a malformed entrant')
  end
end

-- Writes start here.
redis.call('HSET', KEYS[1], 'draw_entrants', string.format('%d', entrants),
  'draw_winners', string.format('%d', winners), 'draw_threshold', threshold,
  'drawn_at', string.format('%d', now))
journal_add(KEYS[3], 'draw_run', '', 0, ARGV[2], now, 0,
  string.format('%d|%d|%s|%s|%s', entrants, winners, meta[6], meta[7], threshold))
return string.format('drawn_now:%d:%d', winners, entrants)
