-- journal.lua: the money journal, prepended (after records.lua: int) to every script that
-- moves money: create_packet.lua (packet debit), deposit.lua (deposit, merchant_deposit),
-- withdraw.lua (withdrawal, merchant_withdrawal), wallet_credit.lua (claim credit),
-- settle.lua (refund credit, packet settled), cancel.lua (refund credit, packet cancelled),
-- merchant_create_packet.lua (a merchant's budget; settle.lua's merchant_refund,
-- merchant_packet_settled and merchant_coupon_refund for a merchant packet, the last also
-- from coupon_release.lua); claim.lua (a coupon packet's share issued as a coupon:
-- coupon_issued); and to the coupon
-- scripts that issue or redeem a code: coupon_grab.lua and coupon_take.lua (coupon issued),
-- coupon_redeem.lua (coupon redeemed), coupon_release.lua (a redemption reversed: coupon
-- released), coupon_close.lua (campaign ended); and draw_run.lua (a draw packet's draw
-- completed: draw_run).
--
-- Each movement appends one entry to the journal of the hash tag its script runs on
-- (`<prefix>:{<tag>}:journal`, a stream), in the same atomic step as the balance change, so
-- the journal holds exactly the movements made: a retried or re-driven step that moves no
-- money (a repeat) writes no entry. ledger-export reads the entries, publishes them and
-- deletes each one once EventBridge has accepted it (journal_ack.lua). A stream holding entries
-- has no TTL: like the idempotency records, an entry is never evicted under a volatile-*
-- policy (an emptied one keeps a short TTL for its last id, journal_ack.lua).
--
-- Entry fields (every number an exact integer); the entry's event_id is not stored but derived
-- by its readers from the journal's key, the entry's stream id and its fields
-- (`hongbao::domain::journal::event_id`): a stream id is given once per journal, so no two
-- entries share one (entries written before carry an `event_id` field, which stays theirs):
--   kind      deposit | packet_debit | claim_credit | refund_credit | withdrawal | packet_settled
--             | packet_cancelled | coupon_issued | coupon_redeemed | coupon_released | campaign_ended
--             | merchant_deposit | merchant_withdrawal | merchant_packet_debit | merchant_refund
--             | merchant_packet_settled | merchant_coupon_refund | draw_run
--             (coupon and draw_run entries move no money: amount and balance 0)
--   user      whose wallet moved (the sender for packet_debit, refund_credit, packet_settled,
--             packet_cancelled); for merchant_* the merchant id (whose budget moved)
--   amount    signed cents (debits negative; 0 for packet_settled and packet_cancelled)
--   ref       the deposit or withdrawal reference, or the packet id; for a coupon
--             "<campaign_id>/<code or generated index>" (a merchant packet's share's coupon:
--             "<packet_id>/<share_id>", as is merchant_coupon_refund's for one coupon's
--             reversed redemption; "<packet_id>/coupons" for merchant_coupon_refund of the
--             packet's unredeemed coupons at redeem_by), for campaign_ended the campaign id
--   at        Redis TIME, Unix ms
--   balance   the wallet's balance after the movement, cents
--   extra     '' or, for packet_settled and merchant_packet_settled,
--             "<refunded_cents>|<claimed_cents>" (refunded over the
--             packet's life); for packet_cancelled "<refunded_cents>" (at the cancel); for
--             coupon_redeemed the order reference, then "\n<discount_cents>" when the
--             discount is known (an order reference holds no whitespace); for coupon_released
--             the order reference; for campaign_ended "<issued>|<redeemed>|<never_issued>";
--             for coupon_issued of a merchant packet's share "<merchant_id>|<amount_off_cents>";
--             for draw_run "<entrants>|<winners>|<seed>|<commitment>|<threshold or ''>"

local function journal_add(key, kind, user, amount, ref, at, balance, extra)
  redis.call('XADD', key, '*', 'kind', kind, 'user', user,
    'amount', int(amount), 'ref', ref, 'at', int(at), 'balance', int(balance),
    'extra', extra or '')
  -- An emptied journal kept for its last id (journal_ack.lua) holds entries again: no TTL.
  redis.call('PERSIST', key)
end
