-- history.lua: a user's red-packet history, prepended (by
-- shared/src/store/scripts/mod.rs, after records.lua) to the scripts that move the money an
-- entry records, so the entry is written with it: create_packet.lua (the sender's "sent"
-- entry, with the debit), wallet_credit.lua (the grabber's "received" entry, with the claim's
-- credit: once per transfer id, so a claim re-driven by a retry or by reclaim-cron adds one
-- entry), settle.lua (the refund, into the sent entry) and cancel.lua (the cancel's refund and
-- flag). Needs records.lua's int().
--
-- A list is a sorted set on the user's own slot, every member with score 0 so Redis orders
-- members by their bytes: `<time: 13 digits, Unix ms>:<packet_id>:<year>|<cents>|...` (the
-- full layouts are in shared/src/domain/history/entries.rs). Newest first is ZREVRANGEBYLEX, a
-- cursor is a lexicographic bound, and the year and cents sit at fixed places so a pruned
-- entry can be taken out of its year's totals. The totals are one hash per user:
-- `<year>:<role>:count` and `<year>:<role>:cents`, exact integers.
--
-- Entries older than the retention are pruned by these scripts, at most HISTORY_PRUNE_BATCH
-- per list per write (oldest first), so a list never needs SCAN; history_page.lua hides older
-- entries at once. A user who stops sending and receiving keeps nothing: every add gives the
-- user's three keys (both lists and the totals) one TTL, the retention from now
-- (history_keep), so they go together once every entry is older than the retention, the
-- totals with the entries they sum. (The functions refuse a volatile-* eviction policy, which
-- could take them earlier.) A claimed share's received entry outlives the packet's own keys.
local HISTORY_PRUNE_BATCH = 64

-- The business year of Unix ms t by a bounds argument `<first_year>:<s1>:<s2>:<s3>:<s4>`
-- (year first_year + i runs from s(i+1) to s(i+2)); nil outside them.
local function history_year(t, bounds)
  local y, s1, s2, s3, s4 = string.match(bounds, '^(%d+):(%d+):(%d+):(%d+):(%d+)$')
  if not y then
    return nil
  end
  local starts = {tonumber(s1), tonumber(s2), tonumber(s3), tonumber(s4)}
  for i = 1, 3 do
    if starts[i] <= t and t < starts[i + 1] then
      return tonumber(y) + i - 1
    end
  end
  return nil
end

-- The start of a member: the time as 13 digits (lexicographic order = time order until the
-- year 2286) and the packet id.
local function history_prefix(t, packet_id)
  return string.format('%013d', t) .. ':' .. packet_id
end

-- The year and cents of a member, or nil if it has another shape.
local function history_fields(member)
  local year, cents = string.match(member, '^%d+:%x+:(%d+)|(%d+)|')
  return tonumber(year), tonumber(cents)
end

local function history_count(totals, role, year, count, cents)
  local n = redis.call('HINCRBY', totals, year .. ':' .. role .. ':count', count)
  if n <= 0 then
    redis.call('HDEL', totals, year .. ':' .. role .. ':count', year .. ':' .. role .. ':cents')
  else
    redis.call('HINCRBY', totals, year .. ':' .. role .. ':cents', int(cents))
  end
end

-- Adds `member` (checked with history_fields by the caller before its first write) to the
-- list `zset` of `role` ('sent' or 'received') and to its year's totals.
local function history_add(zset, totals, role, member)
  local year, cents = history_fields(member)
  if redis.call('ZADD', zset, 'NX', 0, member) == 1 then
    history_count(totals, role, int(year), 1, cents)
  end
end

-- Replaces entry `old` of list `zset` with `new` (a refund written into a sent entry),
-- keeping the list's TTL: ZREM of its only entry deletes the key, and ZADD would make it again
-- without one.
local function history_replace(zset, old, new)
  local keep = redis.call('PTTL', zset)
  redis.call('ZREM', zset, old)
  redis.call('ZADD', zset, 0, new)
  if keep > 0 then
    redis.call('PEXPIRE', zset, keep)
  end
end

-- Keeps a user's history keys (`sent`, `received`, `totals`) `keep_ms` from now: called after
-- every history_add, so they expire together once the newest entry is older than keep_ms.
local function history_keep(sent, received, totals, keep_ms)
  for _, key in ipairs({sent, received, totals}) do
    redis.call('PEXPIRE', key, keep_ms)
  end
end

-- Forgets the entries of list `zset` older than Unix ms `cutoff` (at most
-- HISTORY_PRUNE_BATCH, oldest first) and takes them out of their years' totals.
local function history_prune(zset, totals, role, cutoff)
  local old = redis.call('ZRANGEBYLEX', zset, '-', '(' .. string.format('%013d', cutoff),
    'LIMIT', 0, HISTORY_PRUNE_BATCH)
  for _, member in ipairs(old) do
    local year, cents = history_fields(member)
    if year then
      history_count(totals, role, int(year), -1, -cents)
    end
  end
  if #old > 0 then
    redis.call('ZREM', zset, unpack(old))
  end
end
