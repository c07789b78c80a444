-- ledger.lua: a wallet's or a merchant's ledger, prepended (after records.lua: int) to every
-- script that moves a balance: create_packet.lua, deposit.lua, withdraw.lua, wallet_credit.lua,
-- settle.lua, cancel.lua, merchant_create_packet.lua and coupon_release.lua.
--
-- A ledger is a list of items `kind|amount_cents|at_ms|reference`, newest first, that keeps its
-- newest `cap` items (domain::wallet::LEDGER_CAP). An item pushed off its end adds its cents
-- to the holder's hash field `ledger_trimmed_cents` in the same step, so at every moment
--   balance = ledger_trimmed_cents + the sum of the ledger's items
-- whatever the ledger's length: reconcile-cron checks that of every wallet and merchant
-- (domain::reconcile). The field has no TTL, as the hash it is in; a holder whose ledger was
-- never trimmed has none (0).

-- Pushes `item` (whose cents are `cents`, as written in it) onto `list`, the ledger of the hash
-- `holder`, and keeps its newest `cap` items: each one trimmed off adds its cents to
-- `ledger_trimmed_cents`. One push trims at most one item of a ledger kept at its cap.
local function ledger_push(list, holder, item, cap)
  local n = redis.call('LPUSH', list, item)
  while n > cap do
    local old = redis.call('RPOP', list)
    local cents = tonumber(string.match(old, '^[^|]*|(%-?%d+)|'))
    if cents then
      redis.call('HINCRBY', holder, 'ledger_trimmed_cents', int(cents))
    end
    n = n - 1
  end
end
