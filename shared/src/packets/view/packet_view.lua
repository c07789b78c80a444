-- packet_view.lua: a consistent snapshot of one red packet and one page of its grabs, in one
-- round trip, its cost bounded by the page whatever the packet's size.
-- redis users: app
-- KEYS[1] meta: packet meta hash
-- KEYS[2] grabs: grabs hash
-- KEYS[3] claims: claims hash
-- KEYS[4] recipients: recipients set
-- KEYS[5] shares: share list (the un-grabbed amounts, in share-id order)
-- KEYS[6] order: grab order list (element i: the user who holds share i + 1)
-- ARGV[1] viewer: the viewer's user id ('' for none)
-- ARGV[2] from (u32): the page's first position (a share id, >= 1)
-- ARGV[3] size (u32): the page's positions (0: no page, only the packet)
-- Returns {} when the packet does not exist, else
--   {meta (flat HGETALL), now_ms, recipient, mine, users, records, claims, ungrabbed,
--    every_grab, every_claim}
-- where
--   recipient is 1 when the packet is targeted and the viewer is one of its recipients or
--     grabbed a share of it, else 0;
--   mine is {record, claim} of the viewer's own grab ('' for none), {} when they grabbed none;
--   users, records and claims are the grabs of shares from .. from + size - 1 (those
--     grabbed): user ids, share records, claim states ('' for unclaimed), in share-id order;
--   ungrabbed is, once the packet is cancelled, expired or settled (the fairness receipt's
--     reveal), the amounts of the page's positions nobody grabbed (LRANGE of the share list,
--     which holds positions grabbed_count + 1 .. count in order), else {} (an open packet's
--     list is secret);
--   every_grab and every_claim are {} unless the order list does not hold every grab (a
--     packet grabbed before the order list was kept): then the whole grabs and claims hashes
--     (flat HGETALL), and users, records and claims are {}.
-- Redis commands: HGETALL meta (tens of fields), TIME, at most HGET x 2, SISMEMBER, HEXISTS,
-- LLEN, LRANGE order and shares over the page, HMGET grabs and claims over the page: O(size).
local meta = redis.call('HGETALL', KEYS[1])
if #meta == 0 then
  return {}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local field = {}
for i = 1, #meta, 2 do
  field[meta[i]] = meta[i + 1]
end
-- A grabber counts as a recipient: a cancelled or settled packet has dropped its recipients
-- set, and its grabbers still see it.
local recipient = 0
if ARGV[1] ~= '' and field['recipients'] then
  recipient = redis.call('SISMEMBER', KEYS[4], ARGV[1])
  if recipient == 0 then
    recipient = redis.call('HEXISTS', KEYS[2], ARGV[1])
  end
end
local mine = {}
if ARGV[1] ~= '' then
  local record = redis.call('HGET', KEYS[2], ARGV[1])
  if record then
    mine = {record, redis.call('HGET', KEYS[3], ARGV[1]) or ''}
  end
end
local from, size = tonumber(ARGV[2]), tonumber(ARGV[3])
local last = from + size - 1
local grabbed = tonumber(field['grabbed_count'] or '0')
local count = tonumber(field['count'] or '0')
local users, records, claims, every_grab, every_claim = {}, {}, {}, {}, {}
if size > 0 and from <= grabbed then
  if redis.call('LLEN', KEYS[6]) == grabbed then
    users = redis.call('LRANGE', KEYS[6], from - 1, math.min(last, grabbed) - 1)
    records = redis.call('HMGET', KEYS[2], unpack(users))
    local states = redis.call('HMGET', KEYS[3], unpack(users))
    for i = 1, #users do
      records[i] = records[i] or ''
      claims[i] = states[i] or ''
    end
  else
    every_grab = redis.call('HGETALL', KEYS[2])
    every_claim = redis.call('HGETALL', KEYS[3])
  end
end
local ungrabbed = {}
local status, expires_at = field['status'], tonumber(field['expires_at'] or '0')
local closed = status == 'settled' or status == 'cancelled' or now >= expires_at
if size > 0 and closed and last > grabbed and from <= count then
  local first = math.max(from, grabbed + 1)
  ungrabbed = redis.call('LRANGE', KEYS[5], first - grabbed - 1, math.min(last, count) - grabbed - 1)
end
return {meta, now, recipient, mine, users, records, claims, ungrabbed, every_grab, every_claim}
