-- article_groups.lua: the poster adds an article to groups and removes it from others, atomically.
--
-- "Redis in Action" chapter 1 (josiahcarlson/redis-in-action, python/ch01_listing_source.py,
-- add_remove_groups, retold in the source blog post on Redis key design): SADD / SREM of the
-- article to `group:<name>` sets. Added here: only the poster may change them, and the article
-- keeps the set of its groups for the answer.
--
-- All keys share the site's hash tag {vote:<site>}, so this runs in one hash slot on a cluster.
-- KEYS[1] article: article hash
-- KEYS[2] article_groups: the article's groups (set of group names)
-- KEYS[3..2+g] group_sets: g group sets (article members): first the ARGV[3] groups to add,
--              then those to remove
-- ARGV[1] user_id: caller user id
-- ARGV[2] member: article member
-- ARGV[3] adds: how many of the group sets are additions
-- ARGV[4..3+g] group_names: the group names of KEYS[3..2+g], in the same order
-- ARGV[4+g] max_groups: the most groups the article may be in
--           (HONGBAO_VOTE_MAX_GROUPS_PER_ARTICLE); read as ARGV[#KEYS + 2]
--
-- Returns one of:
--   {'not_found'}            no such article; nothing written
--   {'forbidden'}            the caller is not the poster; nothing written
--   {'too_many_groups', n}   the change would put the article in more groups than allowed
--                            (n = its groups now); nothing written
--   {'ok', name, ...}        the article's groups afterwards (unordered)
local poster = redis.call('HGET', KEYS[1], 'poster')
if not poster then
  return {'not_found'}
end
if poster ~= ARGV[1] then
  return {'forbidden'}
end
local adds = tonumber(ARGV[3])
-- The size afterwards, before any write: additions not yet there, minus removals that are.
local size = redis.call('SCARD', KEYS[2])
local after, added = size, false
for i = 3, #KEYS do
  local member = redis.call('SISMEMBER', KEYS[2], ARGV[i + 1]) == 1
  if i - 2 <= adds then
    if not member then
      after, added = after + 1, true
    end
  elseif member then
    after = after - 1
  end
end
if added and after > tonumber(ARGV[#KEYS + 2]) then
  return {'too_many_groups', size}
end
for i = 3, #KEYS do
  local name = ARGV[i + 1]
  if i - 2 <= adds then
    redis.call('SADD', KEYS[i], ARGV[2])
    redis.call('SADD', KEYS[2], name)
  else
    redis.call('SREM', KEYS[i], ARGV[2])
    redis.call('SREM', KEYS[2], name)
  end
end
local groups = redis.call('SMEMBERS', KEYS[2])
table.insert(groups, 1, 'ok')
return groups
