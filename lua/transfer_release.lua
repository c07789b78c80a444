-- transfer_release.lua: claim step 4, on the grabber's slot: the claim is done on the packet's
-- slot, so its credit record no longer has to outlive a re-drive. Un-pin it: it is forgotten
-- keep_ms (ARGV[2]) from now (a request still in flight that saw the claim pending finds it
-- until then). Prepended with records.lua.
--
-- helpers: records.lua
-- redis users: app
-- KEYS[1] wallet: wallet hash
-- KEYS[2] records_forget: idempotency "forget after" sorted set
-- ARGV[1] record_id: record id (`claim:<packet id>`)
-- ARGV[2] keep_ms (u64): keep the record this many ms (> 0)
-- Returns the wallet's balance, cents (the claim's answer needs it).
if redis.call('ZSCORE', KEYS[2], ARGV[1]) == 'inf' then
  redis.call('ZADD', KEYS[2], 'XX', int(now_ms() + tonumber(ARGV[2])), ARGV[1])
end
return tonumber(redis.call('HGET', KEYS[1], 'balance') or '0')
