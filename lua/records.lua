-- records.lua: helpers prepended (by shared/src/store/scripts/mod.rs) to the scripts that move
-- money: create_packet.lua, deposit.lua, withdraw.lua, wallet_credit.lua, transfer_release.lua
-- and settle.lua.
--
-- Exact integers: Lua 5.1 numbers are doubles and `..` formats them with "%.14g", so 10^14
-- would be written "1e+14". Every number a money script writes goes through int(), which
-- formats it with "%d" (exact up to 2^53). MAX_EXACT is the largest balance a script accepts.
--
-- Idempotency records never expire by TTL (volatile-* eviction takes TTL'd keys first, and
-- ElastiCache Serverless evicts keys with a TTL when it is full). A user's records live in
-- one hash (record id -> record) and a sorted set (record id -> "forget after", Unix ms from
-- Redis TIME; +inf while a cross-slot step still needs the record). Each money script that
-- adds a record forgets at most PRUNE_BATCH records whose time has passed, so the set stays
-- bounded without SCAN and without TTLs.
local MAX_EXACT = 9007199254740991
local PRUNE_BATCH = 8

local function int(n)
  return string.format('%d', n)
end

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- Forgets up to PRUNE_BATCH records of (hash, forget) whose "forget after" time is <= now.
local function prune_records(hash, forget, now)
  local old = redis.call('ZRANGEBYSCORE', forget, '-inf', now, 'LIMIT', 0, PRUNE_BATCH)
  if #old > 0 then
    redis.call('HDEL', hash, unpack(old))
    redis.call('ZREM', forget, unpack(old))
  end
end

-- "forget after" score for a record kept keep_ms from now; 0 pins it (+inf).
local function forget_score(now, keep_ms)
  if keep_ms > 0 then
    return int(now + keep_ms)
  end
  return '+inf'
end

-- A deposit's, withdrawal's or claim credit's record (deposit.lua, withdraw.lua,
-- wallet_credit.lua): its fingerprint (the amount), then, when the call that applied it
-- gave its id, ' <call id> <balance after, cents>', so that call's re-run, at any later moment,
-- answers what it answered first ('applied' and that balance) and a different call with the
-- same reference 'repeat'. A record written before call ids holds the fingerprint alone.
local function money_record(fingerprint, call, balance)
  if call == '' then
    return fingerprint
  end
  return fingerprint .. ' ' .. call .. ' ' .. int(balance)
end

-- A call's answer under its own key: `key` (a string on the entity's hash tag,
-- `<entity key>:call:<call id>`) is written by the call's first run, in the same script as the
-- transition it made or refused, first writer wins (SET NX: a later transition never rewrites
-- it), and kept keep_ms: the re-send horizon, how long after its first run the same call can
-- still arrive (domain::resend::CALL_KEEP_MS, 960 s). Every run reads it first
-- (call_answer_read); a re-run answers it and writes nothing. One key per call: no cap on an
-- entity's calls, O(1) Redis time, nothing rewritten that grows; the key's TTL bounds what a
-- caller's calls keep.
local function call_answer_read(key)
  local answer = redis.call('GET', key)
  if answer then
    return answer
  end
  return nil
end

local function call_answer_add(key, answer, keep_ms)
  redis.call('SET', key, answer, 'PX', keep_ms, 'NX')
  return answer
end

-- A refused deposit's or withdrawal's answer, kept under its call id (call_answer_add):
-- '<outcome> <balance>', so the call's re-run answers the refusal it got even when the balance
-- would now allow it. The key has a TTL: it guards no money (it records that nothing moved).
local function refusal_read(key)
  local answer = call_answer_read(key)
  if not answer then
    return nil
  end
  local outcome, balance = string.match(answer, '^(%S+) (%d+)$')
  return {outcome, balance}
end

local function refusal_add(key, outcome, balance, keep_ms)
  call_answer_add(key, outcome .. ' ' .. int(balance), keep_ms)
  return {outcome, int(balance)}
end

-- The fingerprint of a money_record, and the call id and balance (a decimal string) of the
-- call that applied it (nil, nil for a record without them).
local function money_record_read(record)
  local fingerprint, call, balance = string.match(record, '^(%S+) (%x+) (%d+)$')
  if fingerprint then
    return fingerprint, call, balance
  end
  return record, nil, nil
end
