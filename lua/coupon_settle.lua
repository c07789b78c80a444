-- coupon_settle.lua: close a reservation in the user's home pool: its item becomes the code
-- another pool gave it (coupon_take.lua), or, when every other pool was empty, the
-- reservation is dropped. Idempotent: a settled reservation settles again to the same state.
--
-- KEYS[1] holders: the home pool's users: user -> items, and "<user>\n" -> the user's last win
--         (see coupon_grab.lua)
-- KEYS[2] pending: the home pool's open reservations: reservation id -> "<user>\n<at_ms>"
-- ARGV[1] user_id: the user the reservation is for
-- ARGV[2] reservation: the reservation id
-- ARGV[3] item: "<pool>/<code or index>" taken for it, or '' when no pool had a code left
-- ARGV[4] grabbed_at_ms: when the item was taken ('' with no item); with the item it becomes
--         the user's last win, so the grab call that made the reservation, sent again, answers
--         the same win
--
-- Returns 'settled:<items>': the user's items afterwards ('' when none).
local mine = redis.call('HGET', KEYS[1], ARGV[1]) or ''
local items, changed = {}, false
for item in string.gmatch(mine, '%S+') do
  if item == '?' .. ARGV[2] then
    changed = true
    if ARGV[3] ~= '' then
      items[#items + 1] = ARGV[3]
    end
  else
    items[#items + 1] = item
  end
end
local after = table.concat(items, ' ')
if changed then
  if after == '' then
    redis.call('HDEL', KEYS[1], ARGV[1])
  elseif ARGV[3] ~= '' then
    redis.call('HSET', KEYS[1], ARGV[1], after,
      ARGV[1] .. '\n', ARGV[2] .. ' ' .. ARGV[3] .. ' ' .. ARGV[4])
  else
    redis.call('HSET', KEYS[1], ARGV[1], after)
  end
end
redis.call('HDEL', KEYS[2], ARGV[2])
return 'settled:' .. after
