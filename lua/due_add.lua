-- due_add.lua: put a packet id into the reclaim index before the packet is created.
--
-- The index lives in its own hash slot, so it cannot be written in the same script as the
-- packet. Writing it first means a crash can leave only a harmless phantom entry (reclaim-cron
-- drops it), never a funded packet that nobody will ever refund.
-- KEYS[1] due: reclaim index (sorted set: packet id -> due time, Unix ms from Redis TIME)
-- ARGV[1] packet_id: the packet's id
-- ARGV[2] expires_in_secs: the packet is due this many seconds after Redis TIME
-- Returns 1 if the entry was added, 0 if the id was already indexed (an id drawn twice: the
-- existing entry, and its due time, are left alone, and the caller must never withdraw it).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local due = now + tonumber(ARGV[2]) * 1000
return redis.call('ZADD', KEYS[1], 'NX', string.format('%d', due), ARGV[1])
