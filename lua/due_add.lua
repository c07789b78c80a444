-- due_add.lua: put a packet id into the reclaim index before the packet is created.
--
-- The index lives in its own hash slot, so it cannot be written in the same script as the
-- packet. Writing it first means a crash can leave only a harmless phantom entry (reclaim-cron
-- drops it), never a funded packet that nobody will ever refund.
-- acknowledged: WAIT for REDIS_WAIT_REPLICAS replicas before the answer
-- redis users: app
-- KEYS[1] due: reclaim index (sorted set: packet id -> due time, Unix ms from Redis TIME)
-- ARGV[1] packet_id: the packet's id
-- ARGV[2] expires_in_secs (u64): the packet is due this many seconds after Redis TIME
-- Returns {added, now_ms}: added is 1 if the entry was added, 0 if the id was already indexed
-- (an id drawn twice, or this call run again: the existing entry and its due time are left
-- alone, and the caller must never move it); now_ms is this node's Redis TIME, Unix ms, which
-- the create passes on as the start of its delivery window (create_packet.lua, ARGV[18]).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local due = now + tonumber(ARGV[2]) * 1000
return {redis.call('ZADD', KEYS[1], 'NX', string.format('%d', due), ARGV[1]), now}
