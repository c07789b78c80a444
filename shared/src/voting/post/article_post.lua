-- article_post.lua: post an article of the voting site, atomically.
--
-- "Redis in Action" chapter 1 (josiahcarlson/redis-in-action, python/ch01_listing_source.py,
-- post_article, retold in the source blog post on Redis key design): the article hash, the score
-- entry (posted time + 432, the poster's own vote) and the time entry. The book writes them in six
-- separate calls, so a crash between its SADD and EXPIRE leaves a `voted:` set that never expires
-- (the race its chapter 3 exercise names); here the vote record and its EXPIREAT are written in the
-- same script.
--
-- The article id comes from an INCR of the site's counter just before (a separate command, so
-- that every key this script touches is declared); a crash in between only skips an id.
-- All keys share the site's hash tag {vote:<site>}, so this runs in one hash slot on a cluster.
-- helpers: quota.lua
-- redis users: vote
-- KEYS[1] article: article hash
-- KEYS[2] voters: vote record (hash user -> 1 | -1)
-- KEYS[3] score: score sorted set
-- KEYS[4] time: time sorted set
-- KEYS[5] post_quota: the poster's articles in the open quota window (a counter of quota.lua,
--         prepended; TTL = the rest of the window)
-- ARGV[1] member: article member (the id, zero-padded to 12 digits)
-- ARGV[2] poster: poster user id
-- ARGV[3] title: title
-- ARGV[4] link: link
-- ARGV[5] voting_window_secs (i64): voting window, seconds (604800)
-- ARGV[6] vote_score (i64): score per vote (432)
-- ARGV[7] clock_offset_secs (i64): clock offset (s) added to Redis TIME; 0 except in tests (see
--         shared/src/store/voting/mod.rs)
-- ARGV[8] quota (u32): articles a poster may post per window (0: no quota)
-- ARGV[9] quota_window_ms (u64): the quota window, ms
--
-- Returns {'posted', posted_at (Unix s, Redis TIME), score}, {'id_taken'} or
-- {'rate_limited', wait_ms} (nothing written).
--
-- Any call may run twice (a cluster client re-sends a command whose reply was lost): an article
-- under this id by this poster with this title and link is this call run again (ids come from
-- INCR, never twice), answered as the first run was (its posted_at, and the score it had then),
-- with nothing written; an article of anyone else is 'id_taken'.
local made = redis.call('HMGET', KEYS[1], 'poster', 'title', 'link', 'posted_at')
if made[1] then
  if made[1] == ARGV[2] and made[2] == ARGV[3] and made[3] == ARGV[4] then
    return {'posted', tonumber(made[4]), tonumber(made[4]) + tonumber(ARGV[6])}
  end
  return {'id_taken'}
end
local quota, window = tonumber(ARGV[8]), tonumber(ARGV[9])
local wait, used = rl_check(KEYS[5], quota, 1, window)
if wait > 0 then
  return {'rate_limited', wait}
end
local t = redis.call('TIME')
local posted = tonumber(t[1]) + tonumber(ARGV[7])
local score = posted + tonumber(ARGV[6])
redis.call('HSET', KEYS[1], 'title', ARGV[3], 'link', ARGV[4], 'poster', ARGV[2],
  'posted_at', posted, 'votes', 1)
-- The poster's automatic up-vote; the record expires when voting closes (no key without TTL):
-- Redis keeps a key while its time is at or before the key's expiry, so the record lives
-- exactly while Redis TIME < posted_at + ARGV[5] (vote.lua answers from its presence).
redis.call('HSET', KEYS[2], ARGV[2], 1)
redis.call('PEXPIREAT', KEYS[2], (posted + tonumber(ARGV[5])) * 1000 - 1)
redis.call('ZADD', KEYS[3], score, ARGV[1])
redis.call('ZADD', KEYS[4], posted, ARGV[1])
rl_count(KEYS[5], quota, used, 1, window)
return {'posted', posted, score}
