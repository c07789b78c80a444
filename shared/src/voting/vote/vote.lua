-- vote.lua: one user's up- or down-vote on one article of the voting site, in one round trip.
-- (lua/rate_limit.lua is prepended: rl_take.)
--
-- "Redis in Action" chapter 1 (josiahcarlson/redis-in-action, python/ch01_listing_source.py,
-- article_vote; the down-vote is from the source blog post on Redis key design), made atomic: the
-- book's ZSCORE / SADD / ZINCRBY / HINCRBY are separate calls (its own note defers the transaction
-- to chapters 3 and 4), and its separate up- and down-vote sets let one user hold both. Here each
-- user holds at most one vote per article (a hash user -> 1 | -1), a repeat changes nothing, a
-- switch moves the vote.
--
-- All keys share the site's hash tag {vote:<site>}, so this runs in one hash slot on a cluster.
-- helpers: rate_limit.lua
-- redis users: vote
-- KEYS[1] article: article hash (title, link, poster, posted_at (Unix s), votes)
-- KEYS[2] voters: vote record (hash user -> 1 | -1, the poster's 1 included; it expires when
--         voting closes: PEXPIREAT (posted_at + ARGV[6]) x 1000 - 1, set when the article was
--         posted)
-- KEYS[3] score: score sorted set (article member -> posted_at + ARGV[7] x votes)
-- KEYS[4] rate: rate-limit counter of the user (see rate_limit.lua)
-- KEYS[5] article_groups: the article's groups (set of group names)
-- KEYS[6] call_answer: this call's answer, `<voters>:call:<call id>` (16 hex digits), kept
--         ARGV[10] ms
--         (as records.lua's call_answer_add, inlined: the vote's Redis user runs no more
--         commands than its votes send)
-- KEYS[7..6+g] group_scores (&[String]): the score sorted sets of the g groups ARGV[11..10+g]
--             names
-- ARGV[1] user_id: the voter
-- ARGV[2] direction (i64): 1 (up) or -1 (down)
-- ARGV[3] member: article member (in KEYS[3])
-- ARGV[4] rate_limit (u32): vote attempts allowed per user per window (0 = unlimited)
-- ARGV[5] rate_window_ms (u64): the window, ms
-- ARGV[6] voting_window_secs (i64): voting window, seconds (604800 = one week)
-- ARGV[7] vote_score (i64): score per vote (432 = 86400 / 200)
-- ARGV[8] clock_offset_secs (i64): clock offset (s) added to Redis TIME; 0 except in tests (see
--         shared/src/store/voting/mod.rs)
-- ARGV[9] poster: the article's poster as the calling sandbox remembers it from an earlier
--         reply, or '' (the sandbox sends '' whenever ARGV[8] is not 0)
-- ARGV[10] call_keep_ms (u64): how long an accepted vote's answer is kept under its call id,
--          ms (the re-send horizon, domain::resend::CALL_KEEP_MS)
-- ARGV[11..10+g] group_names (&[String]): the article's groups as the calling sandbox
--                remembers them from an earlier reply (none at first)
--
-- Two ways to know that voting is open (both by the Redis clock):
-- * ARGV[9] given: the vote record holds the poster's vote for as long as voting is open (Redis
--   expires it at the deadline, above), so one HMGET of the caller's and the poster's votes
--   says "open" and gives the caller's earlier vote. An article's poster and posted_at never
--   change, so the sandbox's memory of the poster cannot go stale.
-- * otherwise, or when that HMGET finds no poster's vote (voting has closed, or the record is
--   missing): the article hash (posted_at, votes, poster) and Redis TIME, as before; the reply
--   then ends with ':<poster>' for the sandbox to remember.
--
-- Returns one string, the outcome and its data joined by ':' (a flat string: a Lua table reply
-- costs the server about 1 us more):
--   'not_found'                         no such article; nothing written, no key created
--   'closed:<votes>:<score>'            now >= posted_at + ARGV[6] (Redis TIME); nothing written
--   'rate_limited:<retry_after_ms>'     ARGV[4] attempts already in the window; nothing changed
--   'unchanged:<votes>:<score>[:<poster>]'   the user already holds this vote (a repeat)
--   'changed:<votes>:<score>[:<poster>]'     a new vote (+-1) or a switch (+-2)
--   'regroup:<group>,<group>...'        a new vote or a switch, but ARGV[11..] are not exactly
--                                       the article's groups: nothing written (the attempt is
--                                       not counted); the caller sends the vote again with these
-- (score: the member's score in KEYS[3] as Redis formats it; empty if the member is missing)
-- Every accepted attempt (unchanged or changed) counts toward the rate limit, and its answer is
-- kept under its call id (KEYS[6]): the same call sent again, at any later moment (a lost
-- reply), answers it and writes nothing, even after the user voted otherwise since (it would
-- otherwise switch the vote back). A refused attempt writes nothing; sent again, it is a new
-- attempt.
-- A new vote or a switch moves the score in the site's ranking and in each of the article's
-- groups' rankings (ZADD XX INCR: a group made before groups kept rankings has its ranking
-- built by group_page.lua, from the site's ranking, when it lacks the article).
-- Redis commands of a new vote or a switch, with ARGV[9]: GET (the call's answer), HMGET, SCARD (+ a SISMEMBER per
-- group), INCR (+ PEXPIRE opening the voter's window), HSET, HINCRBY, ZINCRBY (+ a ZADD per
-- group), SET (the answer) (chapter 1's vote is ZSCORE, SADD, ZINCRBY, HINCRBY);
-- without: HMGET, TIME, HMGET first. A repeat: GET, HMGET, INCR, HGET, ZSCORE, SET. Rate limited:
-- GET, HMGET, INCR, DECR, PTTL.
local answered = redis.call('GET', KEYS[6])
if answered then
  return answered
end
-- An accepted vote's answer, kept under its call id (first writer wins) and returned.
local function answer(text)
  redis.call('SET', KEYS[6], text, 'PX', ARGV[10], 'NX')
  return text
end
local poster = ARGV[9]
local remembered = poster ~= ''
local record
if remembered then
  record = redis.call('HMGET', KEYS[2], ARGV[1], poster)
end
if not (record and record[2]) then
  local article = redis.call('HMGET', KEYS[1], 'posted_at', 'votes', 'poster')
  local posted = article[1]
  if not posted then
    return 'not_found'
  end
  posted = tonumber(posted)
  local t = redis.call('TIME')
  local now_ms = (tonumber(t[1]) + tonumber(ARGV[8])) * 1000 + math.floor(tonumber(t[2]) / 1000)
  if now_ms >= (posted + tonumber(ARGV[6])) * 1000 then
    return 'closed:' .. article[2] .. ':' .. (redis.call('ZSCORE', KEYS[3], ARGV[3]) or '')
  end
  -- The record always holds the poster's vote, so one HMGET tells a new voter (nil, poster's
  -- vote) from a record that is gone (nil, nil).
  if not article[3] then
    return redis.error_reply('ERR hongbao: vote: the article has no poster field')
  end
  remembered = remembered and poster == article[3]
  poster = article[3]
  record = redis.call('HMGET', KEYS[2], ARGV[1], poster)
  if not record[2] then
    -- The record lives exactly as long as the voting window; inside the window it can only be
    -- gone if something deleted or evicted it. Recreating it would let earlier voters vote
    -- again.
    return redis.error_reply('ERR hongbao: vote: the vote record of an open article is missing')
  end
end
local tail = remembered and '' or (':' .. poster)
-- Votes travel as the strings '1' and '-1' (ARGV[2], the record's values), and the counts are
-- passed to HINCRBY / ZINCRBY as strings too: Lua formats a number argument with "%.14g",
-- which cost this script about a tenth of its time (callgrind).
local prev = record[1]
local dir = ARGV[2]

-- A vote that moves the score moves it in the article's groups too, so the caller must name
-- exactly the article's groups; checked before the first write.
if prev ~= dir then
  local g = #KEYS - 6
  local same = redis.call('SCARD', KEYS[5]) == g
  local i = 1
  while same and i <= g do
    same = redis.call('SISMEMBER', KEYS[5], ARGV[10 + i]) == 1
    i = i + 1
  end
  if not same then
    return 'regroup:' .. table.concat(redis.call('SMEMBERS', KEYS[5]), ',')
  end
end

-- ARGV[4] accepted attempts per ARGV[5] ms; a refused attempt changes nothing.
local wait = rl_take(KEYS[4], tonumber(ARGV[4]), ARGV[5])
if wait > 0 then
  return 'rate_limited:' .. wait
end

if prev == dir then
  return answer('unchanged:' .. (redis.call('HGET', KEYS[1], 'votes') or '') .. ':'
    .. (redis.call('ZSCORE', KEYS[3], ARGV[3]) or '') .. tail)
end
local votes_by, score_by
if not prev then
  -- A new vote: votes +-1, score +-ARGV[7].
  votes_by = dir
  score_by = dir == '1' and ARGV[7] or ('-' .. ARGV[7])
else
  -- A switch: votes +-2, score +-2 x ARGV[7].
  local delta = tonumber(dir) - tonumber(prev)
  votes_by = string.format('%d', delta)
  score_by = string.format('%d', delta * tonumber(ARGV[7]))
end
redis.call('HSET', KEYS[2], ARGV[1], dir)
local votes = redis.call('HINCRBY', KEYS[1], 'votes', votes_by)
local score = redis.call('ZINCRBY', KEYS[3], score_by, ARGV[3])
for i = 7, #KEYS do
  redis.call('ZADD', KEYS[i], 'XX', 'INCR', score_by, ARGV[3])
end
return answer('changed:' .. string.format('%d', votes) .. ':' .. score .. tail)
