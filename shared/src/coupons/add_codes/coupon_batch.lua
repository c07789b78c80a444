-- coupon_batch.lua: the record of a batch of uploaded codes on the campaign's pool 0, and the
-- one outcome of its directory claims, first run wins (see
-- shared/src/store/coupons/add_codes.rs). A batch is: 'open' (step 1: the reference is this
-- batch's, before the start), its codes claimed in the directory (step 2), then 'claimed'
-- (every code is the batch's: the pools may take their shares) or 'refused' (a code belongs to
-- another campaign: the batch's claims are released and no pool ever gets a code of it)
-- (step 3), then the pools (coupon_add_codes.lua, step 4). A run reads the recorded state and
-- goes on from it.
--
-- acknowledged: WAIT for REDIS_WAIT_REPLICAS replicas before the answer
-- redis users: app
-- KEYS[1] pool: pool 0's hash (see coupon_create_pool.lua)
-- KEYS[2] batches: pool 0's batches (see coupon_add_codes.lua); this script's records are
--         the fields "claims <reference>" (a reference holds no space, so no reference is
--         named so) -> "<fingerprint> <state>[ <codes>]", state open, claimed or refused
--         (with the codes another campaign holds, space-separated, at most 10)
-- ARGV[1] reference: the batch's reference
-- ARGV[2] fingerprint: the batch's fingerprint ('v1:' + SHA-256 hex of its codes)
-- ARGV[3] step: 'open', 'claimed' or 'refused'
-- ARGV[4] detail: open: '1' when a code of the batch is claimed for it already (a run began it before
--         the start and stopped before recording it): the start is then not checked (pools
--         check it again, step 4); refused: the codes another campaign holds
--
-- Returns:
--   '<state>:<codes>'   the batch's state (open, claimed or refused, now or before; codes:
--                       refused's, else '')
--   'started'           open: the campaign has started (Redis TIME) or is closed; nothing
--                       written
--   'reference_reused'  the reference names another batch; nothing written
--   'not_found'         no such pool;  'generated': the campaign generates its codes
local field = 'claims ' .. ARGV[1]
local record = redis.call('HGET', KEYS[2], field)
if record then
  local fingerprint, state, codes = string.match(record, '^(%S+) (%a+) ?(.*)$')
  if fingerprint ~= ARGV[2] then
    return 'reference_reused'
  end
  if state == 'open' and ARGV[3] ~= 'open' then
    state = ARGV[3]
    codes = state == 'refused' and ARGV[4] or ''
    local value = ARGV[2] .. ' ' .. state
    if codes ~= '' then
      value = value .. ' ' .. codes
    end
    redis.call('HSET', KEYS[2], field, value)
  end
  return state .. ':' .. codes
end
local meta = redis.call('HMGET', KEYS[1], 'kind', 'starts_at', 'closed')
if not meta[1] then
  return 'not_found'
end
if meta[1] ~= 'uploaded' then
  return 'generated'
end
-- A batch pool 0 took before this record existed was claimed in full first.
local landed = redis.call('HGET', KEYS[2], ARGV[1])
if landed then
  if string.match(landed, '^%S+') ~= ARGV[2] then
    return 'reference_reused'
  end
  redis.call('HSET', KEYS[2], field, ARGV[2] .. ' claimed')
  return 'claimed:'
end
if ARGV[3] ~= 'open' then
  return redis.error_reply('ERR hongbao: coupon_batch: ' .. ARGV[3] .. ' before open')
end
if ARGV[4] ~= '1' then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  if meta[3] or now >= tonumber(meta[2]) then
    return 'started'
  end
end
redis.call('HSET', KEYS[2], field, ARGV[2] .. ' open')
return 'open:'
