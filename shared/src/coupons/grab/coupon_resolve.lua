-- coupon_resolve.lua: step 3 of a grab whose home pool is empty: close a reservation in the
-- user's home pool, once. Its item becomes the code another pool gave it (coupon_take.lua),
-- or, when no other pool had one for it, the reservation is dropped: as sold out ("-"), or,
-- when a pool it passed was not written yet (the campaign's creation still running), as
-- "opening" ("~"): that pool may hold codes for the user's next grab, so the call is not
-- told sold out. The outcome is recorded
-- under the reservation id, first run wins: a later run, whatever item it carries, answers
-- the recorded outcome and changes nothing (coupon_take.lua records each pool's outcome per
-- reservation, so every run carries the same item anyway), and the grab call that made the
-- reservation, sent again, answers it too (coupon_grab.lua).
--
-- acknowledged: WAIT for REDIS_WAIT_REPLICAS replicas before the answer
-- redis users: app
-- KEYS[1] holders: the home pool's users: user -> items, and "\n<call id>" -> the call's
--         outcome (see coupon_grab.lua; a reservation's id is the id of the call that made it)
-- KEYS[2] pending: the home pool's open reservations: reservation id -> "<user>\n<at_ms>"
-- ARGV[1] user_id: the user the reservation is for
-- ARGV[2] reservation: the reservation id
-- ARGV[3] item: "<pool>/<code or index>" taken for it, or '' when no pool had a code for it
-- ARGV[4] grabbed_at_ms: when the item was taken; with no item '' (sold out), or '~' when a
--         pool the walk passed was not written yet (opening)
--
-- Returns:
--   'resolved:<outcome>\n<items>'  the reservation's outcome ("<item> <grabbed_at_ms>", "-"
--                                 for none, "~" for none while the campaign was opening), now
--                                 or by an earlier run, and the user's items afterwards (''
--                                 when none)
--   'unknown'                     the user holds no such reservation and none was resolved;
--                                 nothing written
local field = '\n' .. ARGV[2]
local got = redis.call('HMGET', KEYS[1], ARGV[1], field)
local mine, decided = got[1] or '', got[2]
if decided then
  return 'resolved:' .. decided .. '\n' .. mine
end
local items, found = {}, false
for item in string.gmatch(mine, '%S+') do
  if item == '?' .. ARGV[2] then
    found = true
    if ARGV[3] ~= '' then
      items[#items + 1] = ARGV[3]
    end
  else
    items[#items + 1] = item
  end
end
if not found then
  return 'unknown'
end
local after = table.concat(items, ' ')
local outcome = '-'
if ARGV[3] ~= '' then
  outcome = ARGV[3] .. ' ' .. ARGV[4]
elseif ARGV[4] == '~' then
  outcome = '~'
end
if after == '' then
  redis.call('HDEL', KEYS[1], ARGV[1])
  redis.call('HSET', KEYS[1], field, outcome)
else
  redis.call('HSET', KEYS[1], ARGV[1], after, field, outcome)
end
redis.call('HDEL', KEYS[2], ARGV[2])
return 'resolved:' .. outcome .. '\n' .. after
