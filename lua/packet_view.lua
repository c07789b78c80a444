-- packet_view.lua: a consistent snapshot of one red packet, in one round trip.
-- KEYS[1] meta: packet meta hash
-- KEYS[2] grabs: grabs hash
-- KEYS[3] claims: claims hash
-- KEYS[4] recipients: recipients set
-- ARGV[1] viewer: the viewer's user id ('' for none)
-- Returns {} when the packet does not exist, else
--   {meta (flat HGETALL), grabs (flat HGETALL), claims (flat HGETALL), now_ms, recipient}
-- where recipient is 1 when the packet is targeted and the viewer is one of its recipients.
-- (the grab order is the order of share ids, which count from 1 in grab order)
local meta = redis.call('HGETALL', KEYS[1])
if #meta == 0 then
  return {}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local recipient = 0
if ARGV[1] ~= '' and redis.call('HEXISTS', KEYS[1], 'recipients') == 1 then
  recipient = redis.call('SISMEMBER', KEYS[4], ARGV[1])
end
return {meta, redis.call('HGETALL', KEYS[2]), redis.call('HGETALL', KEYS[3]), now, recipient}
