-- packet.lua: a new red packet's hash and share list, prepended (after records.lua: int) to
-- the scripts that create a packet, create_packet.lua (a user's) and merchant_create_packet.lua
-- (a merchant's): the one place that lays out a new packet's fields (docs/design.md, the
-- packet hash). Every other field of the hash is written later by the steps that own it
-- (grab.lua, claim.lua, settle.lua, cancel.lua, draw_run.lua, ...).

-- Writes the new packet's meta hash `meta`: the fields every packet has from `p` (id, total
-- and count in cents and shares, mode, split, greeting, now and expires_at in Unix ms, the
-- fairness receipt's salt and commitment), its counters at 0 and status 'open', then each
-- name, value pair of `extra` whose value is not '' (a field a packet of this kind does not
-- have is left out, not written empty).
local function packet_write(meta, p, extra)
  redis.call('HSET', meta,
    'packet_id', p.id, 'total_cents', int(p.total), 'count', int(p.count),
    'mode', p.mode, 'split', p.split, 'greeting', p.greeting,
    'created_at', int(p.now), 'expires_at', int(p.expires_at), 'status', 'open',
    'grabbed_count', 0, 'grabbed_cents', 0, 'claimed_cents', 0, 'refunded_cents', 0,
    'salt', p.salt, 'commitment', p.commitment)
  local set = {}
  for i = 1, #extra, 2 do
    if extra[i + 1] ~= '' then
      set[#set + 1] = extra[i]
      set[#set + 1] = extra[i + 1]
    end
  end
  if #set > 0 then
    redis.call('HSET', meta, unpack(set))
  end
end

-- Appends ARGV[from..#ARGV] (share amounts, cents, in share-id order) to the share list
-- `shares`, 1,000 at a time: unpack() of thousands of values would overflow Lua's C stack.
local function shares_push(shares, from)
  local i = from
  while i <= #ARGV do
    local last = math.min(i + 999, #ARGV)
    redis.call('RPUSH', shares, unpack(ARGV, i, last))
    i = last + 1
  end
end
