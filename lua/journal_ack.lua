-- journal_ack.lua: mark journal entries exported (ledger-export, once EventBridge has accepted
-- them): delete them, and the journal itself once it is empty, so that an idle pass's EXISTS
-- finds nothing. Deleting an entry that is already gone changes nothing (a re-run's ack).
--
-- KEYS[1] journal: the journal stream of one hash tag
-- ARGV[1..] stream_ids: the stream ids of the exported entries
--
-- Returns the number of entries left in the journal.
local ids = {}
for i = 1, #ARGV do
  ids[i] = ARGV[i]
end
redis.call('XDEL', KEYS[1], unpack(ids))
local left = redis.call('XLEN', KEYS[1])
if left == 0 then
  redis.call('DEL', KEYS[1])
end
return left
