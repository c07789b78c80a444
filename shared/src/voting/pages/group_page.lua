-- group_page.lua: one page of a group's articles, by score or by time, from the group's own
-- ranking.
--
-- "Redis in Action" chapter 1 (josiahcarlson/redis-in-action, python/ch01_listing_source.py,
-- get_group_articles, retold in the source blog post on Redis key design) intersects the group
-- set with the site's score (or time) sorted set into a cache kept 60 s: a page then costs the
-- intersection, in proportion to the group's size, once a minute, and shows votes up to a
-- minute late. Here each group keeps its own rankings, written by the scripts that change them
-- (article_groups.lua copies an article's entries in when it joins and removes them when it
-- leaves; vote.lua moves the score in each of the article's groups), so a page is one ZRANGE,
-- O(log n + page), and shows every vote at once.
--
-- A group made before groups kept rankings (its set larger than its ranking; the scripts keep
-- the two the same size from then on, so SCARD and ZCARD tell it in O(1)) gets its ranking
-- built here once: ZINTERSTORE of the group set and the site's ranking with WEIGHTS 0 1, each
-- member's score exactly as in the site's ranking.
--
-- All keys share the site's hash tag {vote:<site>}, so this runs in one hash slot on a cluster.
-- redis users: vote
-- KEYS[1] group: group set (article members)
-- KEYS[2] site_ranking: the site's score or time sorted set
-- KEYS[3] group_ranking: the group's sorted set by the same order
-- ARGV[1] first_rank (u64): first rank (0-based, highest score first)
-- ARGV[2] last_rank (u64): last rank (inclusive)
--
-- Returns the article members of the page, highest score first; equal scores: the larger member
-- first (members are zero-padded ids, so the later article first). A group that does not exist
-- answers an empty page. Writes only the one-time build; a re-run finds it built.
local size = redis.call('SCARD', KEYS[1])
if size == 0 then
  return {}
end
if redis.call('ZCARD', KEYS[3]) ~= size then
  redis.call('ZINTERSTORE', KEYS[3], 2, KEYS[1], KEYS[2], 'WEIGHTS', 0, 1)
end
return redis.call('ZRANGE', KEYS[3], ARGV[1], ARGV[2], 'REV')
