-- coupon_create_pool.lua: write one pool of a new coupon campaign, once: its rules and its codes
-- (uploaded codes, or the range of indices of generated ones). A campaign of P pools is P calls,
-- one per pool hash tag, after coupon_create.lua recorded the campaign
-- (shared/src/store/coupons/create.rs); each call is idempotent, so a creation cut short is
-- completed by the same request sent again.
--
-- acknowledged: WAIT for REDIS_WAIT_REPLICAS replicas before the answer
-- redis users: app
-- KEYS[1] pool: the pool's hash (the campaign's rules, copied into every pool, and its counts)
-- KEYS[2] codes: the pool's un-issued uploaded codes (list; empty for generated codes)
-- ARGV[1] fingerprint: the creating request's fingerprint ('v1:' + SHA-256 hex)
-- ARGV[2] title: the campaign's title
-- ARGV[3] starts_at_ms (i64): when grabbing opens, Unix ms
-- ARGV[4] ends_at_ms (i64): when grabbing ends (exclusive), Unix ms
-- ARGV[5] redeem_by_ms (i64): until when an issued coupon may be redeemed (exclusive), Unix ms
-- ARGV[6] per_user (u32): codes one user may grab from the campaign (1..10)
-- ARGV[7] pools (u32): the campaign's number of pools
-- ARGV[8] kind: 'uploaded' or 'generated'
-- ARGV[9] first_index (u64): generated: the pool's first index; uploaded: 0
-- ARGV[10] end_index (u64): generated: the pool's end index (exclusive); uploaded: 0
-- ARGV[11] secret: generated: the campaign's code secret (32 hex digits); uploaded: ''
-- ARGV[12] campaign_total (u64): the campaign's codes at its creation (all pools)
-- ARGV[13] amount_off: the discount's amount off, cents, or '' (see below)
-- ARGV[14] percent_off: the discount's percent off (1..100), or ''
-- ARGV[15] max_off: the most a percent off takes, cents, or ''
-- ARGV[16] min_order: the smallest order total a coupon applies to, cents, or ''
-- ARGV[17] draw_at_ms: a draw campaign's draw_at, Unix ms (every pool), or '' (no draw)
-- ARGV[18] draw_seed: pool 0 of a draw campaign: the draw's seed (64 hex digits,
--          draws::rules::campaign_seed; never in a view before the draw); else ''
-- ARGV[19] draw_commitment: pool 0 of a draw campaign: the seed's commitment; else ''
-- ARGV[20] id_tag: the campaign's id tag (16 characters, domain::coupons::id_tag: its public id
--          is its number's 5 characters and this), or '' (a campaign known by its number alone)
-- ARGV[21..] batch (&[&str]): uploaded: the pool's codes (none for generated)
--
-- Pool hash fields: fingerprint, title, starts_at, ends_at, redeem_by, per_user, pools, kind,
-- total (codes the pool was given), issued (codes issued from it), redeemed (coupons of it
-- redeemed, less the redemptions reversed), campaign_total, for generated codes next (the next
-- index to issue), end and secret, and the discount's amount_off, percent_off, max_off and
-- min_order (each only when set; none: the campaign records no value), id_tag (when set), and for a draw campaign
-- draw_at (every pool: coupon_grab.lua issues nothing before it) and on pool 0 draw_seed and
-- draw_commitment. The discount and the draw are part of the fingerprint, so a re-sent
-- creation with another discount or draw is a conflict.
--
-- Returns:
--   'created'   the pool is written
--   'repeat'    the pool exists with the same fingerprint (a re-sent or re-driven call); nothing
--               written
--   'conflict'  the pool exists with another fingerprint; nothing written
local fingerprint = redis.call('HGET', KEYS[1], 'fingerprint')
if fingerprint then
  if fingerprint == ARGV[1] then
    return 'repeat'
  end
  return 'conflict'
end

local total
if ARGV[8] == 'generated' then
  total = tonumber(ARGV[10]) - tonumber(ARGV[9])
  redis.call('HSET', KEYS[1], 'next', ARGV[9], 'end', ARGV[10], 'secret', ARGV[11])
else
  total = #ARGV - 20
  -- RPUSH in slices of 4,000: Lua's unpack takes at most about 8,000 values at once.
  local slice = {}
  for i = 21, #ARGV do
    slice[#slice + 1] = ARGV[i]
    if #slice == 4000 or i == #ARGV then
      redis.call('RPUSH', KEYS[2], unpack(slice))
      slice = {}
    end
  end
end
redis.call('HSET', KEYS[1], 'fingerprint', ARGV[1], 'title', ARGV[2], 'starts_at', ARGV[3],
  'ends_at', ARGV[4], 'redeem_by', ARGV[5], 'per_user', ARGV[6], 'pools', ARGV[7],
  'kind', ARGV[8], 'total', string.format('%d', total), 'issued', '0', 'redeemed', '0',
  'campaign_total', ARGV[12])
local optional = { 'amount_off', ARGV[13], 'percent_off', ARGV[14], 'max_off', ARGV[15],
  'min_order', ARGV[16], 'draw_at', ARGV[17], 'draw_seed', ARGV[18],
  'draw_commitment', ARGV[19], 'id_tag', ARGV[20] }
for i = 1, #optional, 2 do
  if optional[i + 1] ~= '' then
    redis.call('HSET', KEYS[1], optional[i], optional[i + 1])
  end
end
return 'created'
