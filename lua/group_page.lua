-- group_page.lua: one page of a group's articles, by score or by time, through a 60 s cache.
--
-- "Redis in Action" chapter 1 (josiahcarlson/redis-in-action, python/ch01_listing_source.py,
-- get_group_articles, retold in the source blog post on Redis key design): the group set is
-- intersected with the score (or time) sorted set into a cache sorted set that expires after
-- cache_secs (ARGV[3]). The book checks EXISTS, runs ZINTERSTORE and EXPIRE as three calls (a
-- crash between the last two leaves a cache without TTL, served forever); here they are one
-- script. Differences from the book, on purpose:
--   * WEIGHTS 0 1 (sum) instead of AGGREGATE MAX: the member's score is exactly its score in the
--     sorted set, also if it were below the set's weight of 1;
--   * a stamp key holds the build time, so an empty intersection is cached too and the age is
--     measured on the (offset) clock of ARGV[4];
--   * a group that does not exist answers an empty page without writing anything.
--
-- All keys share the site's hash tag {vote:<site>}, so this runs in one hash slot on a cluster.
-- KEYS[1] group: group set (article members)
-- KEYS[2] ranking: score or time sorted set
-- KEYS[3] cache: cache sorted set
-- KEYS[4] stamp: cache stamp (string: build time, Unix ms)
-- ARGV[1] first_rank: first rank (0-based, highest score first)
-- ARGV[2] last_rank: last rank (inclusive)
-- ARGV[3] cache_secs: cache lifetime, seconds
-- ARGV[4] clock_offset_secs: clock offset (s) added to Redis TIME; 0 except in tests
--
-- Returns the article members of the page, highest score first; equal scores: the larger member
-- first (members are zero-padded ids, so the later article first).
if redis.call('EXISTS', KEYS[1]) == 0 then
  return {}
end
local t = redis.call('TIME')
local now_ms = (tonumber(t[1]) + tonumber(ARGV[4])) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[3])
local built = redis.call('GET', KEYS[4])
if not built or now_ms - tonumber(built) >= ttl * 1000 then
  redis.call('ZINTERSTORE', KEYS[3], 2, KEYS[1], KEYS[2], 'WEIGHTS', 0, 1)
  redis.call('EXPIRE', KEYS[3], ttl)
  redis.call('SET', KEYS[4], now_ms, 'EX', ttl)
end
return redis.call('ZRANGE', KEYS[3], ARGV[1], ARGV[2], 'REV')
