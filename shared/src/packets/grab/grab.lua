-- grab.lua: give the caller at most one share of a red packet, in one round trip.
-- (lua/rate_limit.lua is prepended: rl_take.)
--
-- helpers: rate_limit.lua
-- redis users: app
-- KEYS[1] meta: packet meta hash
-- KEYS[2] shares: share list (un-grabbed amounts, cents)
-- KEYS[3] grabs: grabs hash (user -> share record)
-- KEYS[4] rate: rate-limit counter of this user on this packet (see rate_limit.lua)
-- KEYS[5] recipients: the packet's recipients set (read only for a targeted packet)
-- KEYS[6] wrong_guesses: the packet's wrong password guesses, every user's, in its open guess
--         window (a counter whose TTL is the rest of the window)
-- KEYS[7] guesses: this user's wrong password guesses on this packet over its life (a counter
--         expiring at the packet's expires_at)
-- KEYS[8] order: the packet's grab order list (a win appends the grabber: element i holds
--         share i + 1), which lets the packet view read one page of grabs
-- ARGV[1] user_id: the caller
-- ARGV[2] rate_limit (u32): attempts allowed per window (0 = unlimited)
-- ARGV[3] rate_window_ms (u64): the window, ms
-- ARGV[4] password: the verifier of the password the grabber sent for this packet
--         (domain::packets::password), '' for none
-- ARGV[5] call_id: this call's id (8 hex digits, drawn per call; a re-sent call carries the
--         same), '' for none
-- ARGV[6] guess_budget (u32): wrong guesses per packet per guess window before every user's guesses
--         slow to one per window (0 = no budget)
-- ARGV[7] guess_window_ms (u64): the guess window, ms
-- ARGV[8] guesses_per_user (u32): wrong guesses one user may make on a password packet over its
--         life; from then on their every password attempt on it, right or wrong, is refused
--         (0 = no cap)
--
-- A draw packet (meta draw_at) is not first come, first served: from its opening until
-- draw_at this script checks the grab as any (targeted, cancelled, expired, not open yet,
-- password) and answers the packet's seed, writing nothing; the function computes the
-- caller's ticket from it and enters them with lua/draw_enter.lua (the seed never leaves the
-- service before the draw). From draw_at the draw runs (lua/draw_run.lua, called by whoever
-- finds it due); then a winner's grab answers their share (their record ends ':drawn') and
-- anyone else's 'not_drawn'.
--
-- A share record is "<share_id>:<amount_cents>:<grabbed_at_ms>[:<call_id>]"; share ids count
-- from 1 in grab order. A win also appends the grabber to the order list (KEYS[8]) and, when
-- its share is larger than every earlier one, records it in meta as best_user and best_cents
-- (ties go to the earlier grab), so that the packet view answers a page of grabs and the best
-- luck without reading every grab. Any call may run twice (a cluster client re-sends a command whose reply was
-- lost): a run that finds the caller's share recorded with this call's id is that call run
-- again and answers 'grabbed' as the first run did (HGET meta for its expires_at), not
-- counted by the rate limit; another call of the same user is a repeat.
-- Returns one string, the outcome and its data joined by ':' (a flat string, not a table:
-- converting a Lua table reply costs the server about 1 us, a sixth of a repeat's time):
--   'not_found'
--   'wrong_password'              a password packet, and ARGV[4] is not its verifier: only the
--                                 counters are written (the user's attempt, the packet's wrong
--                                 guess, the user's guesses), so guessing costs attempts
--   'guesses_exhausted'           a password packet, and the caller's wrong guesses on it reached
--                                 ARGV[8]: refused without looking at the password, for good;
--                                 nothing written
--   'cancelled'                   the sender cancelled the packet (its un-grabbed shares are
--                                 refunded); nothing written
--   'not_a_recipient'             a targeted packet neither cancelled nor settled, and the
--                                 caller is not one of its recipients
--   'rate_limited:<retry_after_ms>'
--   'already_grabbed:<record>'    the caller's one share, however often they ask
--   'expired[:<expires_at_ms>]'   Redis TIME is at or past expires_at, or the packet is settled
--   'sold_out[:<expires_at_ms>:<now_ms>]'   every share is grabbed, before expires_at (now_ms:
--                                           Redis TIME)
--   'not_open_yet:<opens_at_ms>:<now_ms>'   a scheduled packet before its opening (Redis
--                                           TIME); nothing written, not counted
--   'grabbed:<record>:<expires_at_ms>'
--   'draw_seed:<seed>:<draw_at_ms>'  a draw packet in its entry window: enter with
--                                 draw_enter.lua; nothing written
--   'draw_due:<draw_at_ms>'       the entry window has closed and the draw is not complete:
--                                 run it (draw_run.lua) and ask again; nothing written
--   'not_drawn'                   the draw is complete and the caller did not win
-- expired and sold_out carry their data only for an untargeted packet: the sandbox may then
-- remember the answer and give it to later callers with one HGET of KEYS[3] instead of this
-- script (shared/src/store/packets/gone.rs; both states are monotone). A targeted packet's
-- answer is not remembered: it depends on the caller (not_a_recipient comes first while the
-- packet takes grabs).
--
-- Redis commands per path:
--   repeat (already grabbed)  HGET, INCR          (HGET, INCR, PEXPIRE opening a window)
--   rate limited              HGET, INCR, DECR, PTTL   nothing changed (see rate_limit.lua)
--   sold out / expired        HGET, HMGET, TIME   nothing written
--   win                       HGET, HMGET, TIME, LPOP, HSET meta, HSET grabs, RPUSH
--   wrong password            HGET, HMGET, TIME, GET, GET, INCR, INCR, INCR   (+ PEXPIRE
--                             per window opened, PEXPIREAT at the user's first guess; without a
--                             budget or a cap: no GET and one INCR fewer each)
--   guesses exhausted         HGET, HMGET, TIME, GET   nothing written
--   guess refused             HGET, HMGET, TIME, GET, INCR, DECR, PTTL   nothing changed
-- Repeats that reach this script count toward the rate limit. A win does not: a user wins at
-- most once per packet, so limiting it protects nothing, and counting it would cost every win a
-- keyed write with a TTL. An unknown, expired or sold-out packet is answered before the limit.
-- A repeat on a packet the sandbox remembers as sold out or expired never reaches this script
-- and is not counted: it costs Redis one HGET, less than the limiter's own INCR (+ PEXPIRE), so
-- counting it would double the cost of the answer it limits (API Gateway's route throttle
-- still bounds the rate).
-- A missing or wrong password (ARGV[4] is not meta's verifier), in both branches: a guess.
-- Two limits, and only the counters are written:
-- * the user's own, on KEYS[4]: ARGV[2] attempts per ARGV[3] ms, as any repeat;
-- * the packet's budget, KEYS[6]: once the packet's open guess window holds ARGV[6] wrong
--   guesses, every user's guesses on it slow to one per guess window (rl_take on the same
--   per-user counter with limit 1 and the guess window), until that window closes. So a
--   crowd of n accounts gets at most ARGV[6] + n answers per guess window instead of n x
--   ARGV[2] per ARGV[3] ms, and one account gains nothing by the crowd.
-- A right password meets neither: a win is not counted (see below), so a member who knows
-- the password gets in however many others guess, and one who mistyped has their next try
-- within one guess window.
-- * the user's guesses over the packet's life, KEYS[7]: once they reach ARGV[8], every
--   password attempt of theirs on the packet is 'guesses_exhausted' before the password is
--   compared (a right one too: otherwise each further try would still tell right from wrong),
--   so one account learns at most ARGV[8] answers, however long it waits.
-- Only an answered guess counts toward the budget (a refused one writes nothing: see
-- rate_limit.lua), so the budget measures what the crowd learns. The budget's count is read
-- (GET) before the first write and taken (INCR, + PEXPIRE opening the window) after the
-- user's counter accepted the guess: it cannot be refused for maxmemory after that first
-- write. It guards no money, so a TTL is its whole life. A re-sent guess is counted again
-- and answers 'wrong_password' or 'rate_limited': a refusal as the first was, nothing else
-- written.
local function wrong_guess(expires_at)
  local budget = tonumber(ARGV[6])
  local wait
  if budget > 0 and tonumber(redis.call('GET', KEYS[6]) or '0') >= budget then
    wait = rl_take(KEYS[4], 1, ARGV[7])
  else
    wait = rl_take(KEYS[4], tonumber(ARGV[2]), ARGV[3])
  end
  if wait > 0 then
    return 'rate_limited:' .. wait
  end
  if budget > 0 and redis.call('INCR', KEYS[6]) == 1 then
    redis.call('PEXPIRE', KEYS[6], ARGV[7])
  end
  if tonumber(ARGV[8]) > 0 and redis.call('INCR', KEYS[7]) == 1 then
    redis.call('PEXPIREAT', KEYS[7], expires_at)
  end
  return 'wrong_password'
end

-- Whether the caller's wrong guesses on this password packet reached ARGV[8] (read only).
local function guesses_exhausted()
  local cap = tonumber(ARGV[8])
  return cap > 0 and tonumber(redis.call('GET', KEYS[7]) or '0') >= cap
end

-- A draw packet's grab from its opening on (see the header): the seed to enter with, or
-- after draw_at the draw's answer. Nothing is written but a wrong password's counters.
local function draw_entry(meta, now)
  local draw = redis.call('HMGET', KEYS[1], 'draw_winners', 'drawn_at', 'draw_seed')
  if draw[2] then
    return 'not_drawn'
  end
  if draw[1] or now >= tonumber(meta[9]) then
    return 'draw_due:' .. meta[9]
  end
  if meta[8] and guesses_exhausted() then
    return 'guesses_exhausted'
  end
  if meta[8] and meta[8] ~= ARGV[4] then
    return wrong_guess(meta[2])
  end
  return 'draw_seed:' .. draw[3] .. ':' .. meta[9]
end

local mine = redis.call('HGET', KEYS[3], ARGV[1])
if mine and ARGV[5] ~= '' and string.sub(mine, -9) == ':' .. ARGV[5] then
  return 'grabbed:' .. mine .. ':' .. redis.call('HGET', KEYS[1], 'expires_at')
end
-- A draw's winner: their share, however often they ask (their grab is the draw's answer).
if mine and string.sub(mine, -6) == ':drawn' then
  return 'grabbed:' .. mine .. ':' .. redis.call('HGET', KEYS[1], 'expires_at')
end
if mine then
  local wait = rl_take(KEYS[4], tonumber(ARGV[2]), ARGV[3])
  if wait > 0 then
    return 'rate_limited:' .. wait
  end
  return 'already_grabbed:' .. mine
end

local meta = redis.call('HMGET', KEYS[1], 'status', 'expires_at', 'grabbed_count', 'count',
  'grabbed_cents', 'recipients', 'opens_at', 'password', 'draw_at', 'cancelled_at', 'best_cents')
local status = meta[1]
if not status then
  return 'not_found'
end
-- A targeted packet that still takes grabs: one SISMEMBER, and only for those; nothing
-- written. A cancelled or settled one has dropped its recipients (cancel.lua, settle.lua):
-- every caller gets its state below.
local closed = status == 'cancelled' or status == 'settled' or meta[10]
if meta[6] and not closed and redis.call('SISMEMBER', KEYS[5], ARGV[1]) == 0 then
  return 'not_a_recipient'
end
-- Cancelled by its sender (cancel.lua), also once settled since (settle.lua keeps
-- cancelled_at): no more grabs; nothing written.
if status == 'cancelled' or meta[10] then
  return 'cancelled'
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local expires_at = tonumber(meta[2])
local open = not meta[6]
if status == 'settled' or now >= expires_at then
  return open and ('expired:' .. meta[2]) or 'expired'
end
-- A scheduled packet (opens_at = Redis TIME at creation + opens_in_secs, create_packet.lua):
-- checked before anything that writes; nothing is written. The sandbox's memory cannot answer
-- it early: it is neither sold out nor expired before it opens (expires_at = opens_at +
-- expires_in_secs).
if meta[7] and now < tonumber(meta[7]) then
  return 'not_open_yet:' .. meta[7] .. ':' .. string.format('%d', now)
end
if meta[9] then
  return draw_entry(meta, now)
end
local grabbed = tonumber(meta[3])
if grabbed >= tonumber(meta[4]) then
  return open and string.format('sold_out:%s:%d', meta[2], now) or 'sold_out'
end

-- A password packet: a missing or wrong password is a guess (wrong_guess above: the counters
-- are the only writes), so 200 guesses are stopped like 200 repeats, and a crowd's guesses by
-- the packet's budget.
if meta[8] and guesses_exhausted() then
  return 'guesses_exhausted'
end
if meta[8] and meta[8] ~= ARGV[4] then
  return wrong_guess(meta[2])
end

local amount = redis.call('LPOP', KEYS[2])
if not amount then
  -- grabbed_count < count with no share left: the records disagree. Refuse rather than guess.
  return redis.error_reply('ERR hongbao: grab: share list shorter than count - grabbed_count')
end

-- Exact integers: counts and cents are far below 2^53.
local share_id = grabbed + 1
local counts = {'grabbed_count', string.format('%d', share_id),
  'grabbed_cents', string.format('%d', tonumber(meta[5]) + tonumber(amount))}
if not meta[11] or tonumber(amount) > tonumber(meta[11]) then
  counts[5], counts[6], counts[7], counts[8] = 'best_user', ARGV[1], 'best_cents', amount
end
redis.call('HSET', KEYS[1], unpack(counts))
redis.call('RPUSH', KEYS[8], ARGV[1])
local record = string.format('%d:%s:%d', share_id, amount, now)
if ARGV[5] ~= '' then
  record = record .. ':' .. ARGV[5]
end
redis.call('HSET', KEYS[3], ARGV[1], record)
return 'grabbed:' .. record .. ':' .. meta[2]
