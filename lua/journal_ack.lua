-- journal_ack.lua: mark journal entries exported (ledger-export, once EventBridge has accepted
-- them): delete them. A journal left empty is kept ARGV[1] ms more, then expires by itself
-- (so that an idle pass's EXISTS soon finds nothing): while it exists it keeps its last stream
-- id, and the next entry's id (journal.lua, `XADD *`) is past it even within the same
-- millisecond or on a node whose clock is behind, so no two entries of a journal ever share a
-- stream id, and no two share an event_id. journal_add removes the TTL (PERSIST) when it adds
-- an entry. Deleting an entry that is already gone changes nothing (a re-run's ack).
--
-- redis users: ledger-export
-- KEYS[1] journal: the journal stream of one hash tag
-- ARGV[1] empty_keep_ms (u64): how long an emptied journal is kept, ms (the nodes' clock margin)
-- ARGV[2..] stream_ids (&[String]): the stream ids of the exported entries
--
-- Returns the number of entries left in the journal.
local ids = {}
for i = 2, #ARGV do
  ids[i - 1] = ARGV[i]
end
redis.call('XDEL', KEYS[1], unpack(ids))
local left = redis.call('XLEN', KEYS[1])
if left == 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
return left
