-- packet_view.lua: a consistent snapshot of one red packet, in one round trip.
-- KEYS[1] meta: packet meta hash
-- KEYS[2] grabs: grabs hash
-- KEYS[3] claims: claims hash
-- KEYS[4] recipients: recipients set
-- KEYS[5] shares: share list (the un-grabbed amounts, in share-id order)
-- ARGV[1] viewer: the viewer's user id ('' for none)
-- Returns {} when the packet does not exist, else
--   {meta (flat HGETALL), grabs (flat HGETALL), claims (flat HGETALL), now_ms, recipient,
--    ungrabbed}
-- where recipient is 1 when the packet is targeted and the viewer is one of its recipients or
-- grabbed a share of it,
-- and ungrabbed is the share list (LRANGE) once the packet is cancelled, expired or settled (the fairness
-- receipt's reveal: grabbed shares from grabs, the rest from here), else {} (an open packet's
-- list is secret, and reading thousands of shares on every view would cost every view).
-- (the grab order is the order of share ids, which count from 1 in grab order)
local meta = redis.call('HGETALL', KEYS[1])
if #meta == 0 then
  return {}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- A grabber counts as a recipient: a cancelled or settled packet has dropped its recipients
-- set, and its grabbers still see it.
local recipient = 0
if ARGV[1] ~= '' and redis.call('HEXISTS', KEYS[1], 'recipients') == 1 then
  recipient = redis.call('SISMEMBER', KEYS[4], ARGV[1])
  if recipient == 0 then
    recipient = redis.call('HEXISTS', KEYS[2], ARGV[1])
  end
end
local ungrabbed = {}
local status, expires_at = nil, nil
for i = 1, #meta, 2 do
  if meta[i] == 'status' then status = meta[i + 1] end
  if meta[i] == 'expires_at' then expires_at = tonumber(meta[i + 1]) end
end
if status == 'settled' or status == 'cancelled' or (expires_at and now >= expires_at) then
  ungrabbed = redis.call('LRANGE', KEYS[5], 0, -1)
end
return {meta, redis.call('HGETALL', KEYS[2]), redis.call('HGETALL', KEYS[3]), now, recipient,
  ungrabbed}
