-- article_groups.lua: the poster adds an article to groups and removes it from others, atomically.
--
-- "Redis in Action" chapter 1 (josiahcarlson/redis-in-action, python/ch01_listing_source.py,
-- add_remove_groups, retold in the source blog post on Redis key design): SADD / SREM of the
-- article to `group:<name>` sets. Added here: only the poster may change them, the article
-- keeps the set of its groups for the answer, and each group keeps its own rankings by score
-- and by time (the article's entries in the site's rankings, copied when it joins, removed
-- when it leaves; vote.lua moves the score in each of the article's groups), so a group's page
-- is one ZRANGE (group_page.lua) instead of the book's intersection.
--
-- All keys share the site's hash tag {vote:<site>}, so this runs in one hash slot on a cluster.
-- redis users: vote
-- KEYS[1] article: article hash
-- KEYS[2] article_groups: the article's groups (set of group names)
-- KEYS[3] score: the site's score sorted set
-- KEYS[4] time: the site's time sorted set
-- KEYS[5] call_answer: this call's answer, `<article_groups>:call:<call id>` (16 hex digits),
--         kept ARGV[3] ms
-- KEYS[6..5+g] group_sets (&[String]): g group sets (article members): first the ARGV[4]
--              groups to add, then those to remove
-- KEYS[6+g..5+2g] group_scores (&[String]): the score sorted sets of the same g groups, in the
--                 same order
-- KEYS[6+2g..5+3g] group_times (&[String]): the time sorted sets of the same g groups, in the
--                  same order
-- ARGV[1] user_id: caller user id
-- ARGV[2] member: article member
-- ARGV[3] call_keep_ms (u64): how long the answer is kept under the call id, ms (the re-send
--         horizon, domain::resend::CALL_KEEP_MS)
-- ARGV[4] adds (usize): how many of the group sets are additions
-- ARGV[5..4+g] group_names (&[&str]): the group names of KEYS[6..5+g], in the same order
-- ARGV[5+g] max_groups (u32): the most groups the article may be in
--           (HONGBAO_VOTE_MAX_GROUPS_PER_ARTICLE); read as ARGV[#ARGV]
--
-- Returns one of:
--   {'not_found'}            no such article; nothing written
--   {'forbidden'}            the caller is not the poster; nothing written
--   {'too_many_groups', n}   the change would put the article in more groups than allowed
--                            (n = its groups now); nothing written
--   {'ok', name, ...}        the article's groups afterwards (unordered)
--
-- Any call may run twice, at any later moment: the answer of a change or of a refusal by the
-- group limit (both depend on the article's groups, which move both ways) is kept under the
-- call id (KEYS[5]), and the same call sent again answers it and writes nothing, even after
-- the poster changed the groups since (it would otherwise undo that change). not_found and
-- forbidden are answered from state that does not come back (a poster never changes).
local kept = redis.call('GET', KEYS[5])
if kept then
  local answer = {}
  for item in string.gmatch(kept, '[^\n]+') do
    answer[#answer + 1] = item
  end
  return answer
end
-- The answer, kept under the call id (first writer wins) and returned.
local function answer(items)
  redis.call('SET', KEYS[5], table.concat(items, '\n'), 'PX', ARGV[3], 'NX')
  return items
end
local poster = redis.call('HGET', KEYS[1], 'poster')
if not poster then
  return {'not_found'}
end
if poster ~= ARGV[1] then
  return {'forbidden'}
end
local adds = tonumber(ARGV[4])
local g = (#KEYS - 5) / 3
-- The size afterwards, before any write: additions not yet there, minus removals that are.
local size = redis.call('SCARD', KEYS[2])
local after, added = size, false
for i = 1, g do
  local member = redis.call('SISMEMBER', KEYS[2], ARGV[4 + i]) == 1
  if i <= adds then
    if not member then
      after, added = after + 1, true
    end
  elseif member then
    after = after - 1
  end
end
if added and after > tonumber(ARGV[#ARGV]) then
  return answer({'too_many_groups', tostring(size)})
end
local score, posted
if adds > 0 then
  score = redis.call('ZSCORE', KEYS[3], ARGV[2])
  posted = redis.call('ZSCORE', KEYS[4], ARGV[2])
  if not (score and posted) then
    return redis.error_reply('ERR hongbao: article_groups: the article is missing from the rankings')
  end
end
for i = 1, g do
  local name, set = ARGV[4 + i], KEYS[5 + i]
  local by_score, by_time = KEYS[5 + g + i], KEYS[5 + 2 * g + i]
  if i <= adds then
    redis.call('SADD', set, ARGV[2])
    redis.call('ZADD', by_score, score, ARGV[2])
    redis.call('ZADD', by_time, posted, ARGV[2])
    redis.call('SADD', KEYS[2], name)
  else
    redis.call('SREM', set, ARGV[2])
    redis.call('ZREM', by_score, ARGV[2])
    redis.call('ZREM', by_time, ARGV[2])
    redis.call('SREM', KEYS[2], name)
  end
end
local groups = redis.call('SMEMBERS', KEYS[2])
table.insert(groups, 1, 'ok')
return answer(groups)
