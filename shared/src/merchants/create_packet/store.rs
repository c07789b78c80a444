//! `POST /merchant-packets`'s store step: the reclaim index entry (`lua/due_add.lua`), then the
//! budget's debit and the packet in one script on the merchant's hash slot
//! (`merchant_create_packet.lua`), and that script's reply.

use crate::store::scripts::{DueAddCall, MerchantCreatePacketCall};
use redis::Value;

use crate::domain::split;
use crate::merchants::rules::coupons::MAX_REDEEM_WITHIN_SECS;
use crate::merchants::rules::{MerchantPacketOutcome, NewMerchantPacket};
use crate::packets::create::store::reclaim_soon;
use crate::packets::rules::{receipt, CREATE_WINDOW_MS, MAX_EXPIRES_IN_SECS};
use crate::packets::view::store::load;
use crate::store::keys::{new_packet_id, Keys};
use crate::store::scripts::{int, texts, Call};
use crate::store::{Error, Store};
use crate::wallet::rules::LEDGER_CAP;

/// `merchant_create_packet.lua`'s reply.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Reply {
    /// `created <packet_id> <balance>`: the packet exists now, the budget debited; the
    /// budget's balance after it, cents.
    Created(i64),
    /// `repeat <packet_id>`: the order's packet, from the same request.
    Repeat(String),
    /// `order_reference_reused <packet_id>`: the order's packet, from another request.
    OrderReferenceReused(String),
    /// `insufficient_funds <balance>`.
    InsufficientFunds(i64),
    /// `id_taken`: draw another id.
    IdTaken,
    /// `late`: delivered after its window; nothing was created.
    Late,
}

impl MerchantCreatePacketCall<'_> {
    /// The script's reply as a [`Reply`].
    ///
    /// # Errors
    /// [`Error::Internal`] for a reply of another shape.
    fn reply(reply: Value) -> Result<Reply, Error> {
        const SCRIPT: &str = "merchant_create_packet";
        let reply = texts(SCRIPT, reply)?;
        let id = || {
            reply
                .get(1)
                .cloned()
                .ok_or_else(|| Error::bad_reply(SCRIPT, "no packet id"))
        };
        Ok(match reply.first().map(String::as_str) {
            Some("created") => Reply::Created(int(SCRIPT, reply.get(2))?),
            Some("repeat") => Reply::Repeat(id()?),
            Some("order_reference_reused") => Reply::OrderReferenceReused(id()?),
            Some("insufficient_funds") => Reply::InsufficientFunds(int(SCRIPT, reply.get(1))?),
            Some("id_taken") => Reply::IdTaken,
            Some("late") => Reply::Late,
            _ => return Err(Error::bad_reply(SCRIPT, format!("{reply:?}"))),
        })
    }
}

/// Creates the packet of `req`'s order, paid from its merchant's budget: one packet per
/// (merchant, order), debited once however often the call is sent or re-sent.
///
/// As `store::packets::create`: the shares are split here (thread CSPRNG) and committed to by
/// the fairness receipt, the packet is put into the reclaim index first and then created with
/// the debit in one script, each call draws a fresh packet id (the merchant's tag: the packet
/// lives on the budget's hash slot, so its refund is atomic with its settlement), and a
/// refusal brings the index entry forward. The order's record (`order:<order_reference>` in
/// the merchant's records) is kept past the packet's expiry and retention, and at least
/// `HONGBAO_IDEMPOTENCY_TTL_SECS`.
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached (the packet may or may not exist:
/// sending the same body again answers it, debited once).
pub async fn create_packet(
    store: &Store,
    req: &NewMerchantPacket,
) -> Result<MerchantPacketOutcome, Error> {
    let cfg = store.config();
    let keys = Keys::new(&cfg.key_prefix);
    let p = &req.packet;
    let amounts = split::split(p.total_cents, p.count, p.mode, p.split, &mut rand::rng())
        .map_err(|e| Error::Internal(format!("split of a validated request failed: {e}")))?;
    let salt = receipt::new_salt(&mut rand::rng());
    let commitment = receipt::commitment(&salt, &amounts);
    let fingerprint = req.fingerprint();
    let mk = keys.merchant(&req.merchant_id);
    let due = keys.reclaim_due();
    // A coupon packet's records live until its coupons' `redeem_by` and the retention after.
    let redeem_within_secs = req.coupon.map_or(0, |c| c.redeem_within_secs as u64);
    let order_keep_ms = (p.lifetime_secs() + redeem_within_secs + cfg.packets.retention_secs)
        .max(cfg.packets.idempotency_ttl_secs)
        * 1000;
    // The index keeps an entry as long as the longest-lived packet can exist.
    let index_keep_ms =
        (MAX_EXPIRES_IN_SECS + MAX_REDEEM_WITHIN_SECS as u64 + cfg.packets.retention_secs)
            .max(cfg.packets.idempotency_ttl_secs)
            * 1000;
    let min_order = req
        .coupon
        .and_then(|c| c.min_order_cents)
        .map_or(String::new(), |m| m.to_string());
    let redeem_within = req
        .coupon
        .map_or(String::new(), |c| (c.redeem_within_secs * 1000).to_string());
    let mut conn = store.conn().await?;
    for _ in 0..3 {
        let packet_id = new_packet_id(&req.merchant_id);
        let (indexed, indexed_at_ms) = DueAddCall {
            due: &due,
            packet_id: &packet_id,
            expires_in_secs: p.lifetime_secs(),
        }
        .run(&mut conn)
        .await?;
        let pk = keys.packet(&packet_id);
        let call = MerchantCreatePacketCall {
            merchant: &mk.merchant,
            ledger: &mk.ledger,
            records: &mk.records,
            records_forget: &mk.records_forget,
            meta: &pk.meta,
            shares: &pk.shares,
            grabs: &pk.grabs,
            packets: &mk.packets,
            journal: &mk.journal,
            order: &pk.order,
            packet_id: &packet_id,
            merchant_id: &req.merchant_id,
            order_reference: &req.order_reference,
            sharer_id: &req.sharer_id,
            payout: req.payout.as_str(),
            sharer_first: if req.sharer_first { "1" } else { "" },
            total_cents: p.total_cents,
            count: p.count,
            mode: p.mode.as_str(),
            split: p.split_name().unwrap_or(""),
            greeting: p.greeting.as_deref().unwrap_or(""),
            cover: p.cover.as_deref().unwrap_or(""),
            expires_in_secs: p.expires_in_secs,
            fingerprint: &fingerprint,
            order_keep_ms,
            ledger_cap: LEDGER_CAP,
            indexed_at_ms,
            delivery_window_ms: CREATE_WINDOW_MS,
            salt: &salt,
            commitment: &commitment,
            index_keep_ms,
            min_order_cents: &min_order,
            redeem_within_ms: &redeem_within,
            share_amounts: &amounts,
        };
        let reply = MerchantCreatePacketCall::reply(
            call.invocation().invoke_async::<Value>(&mut conn).await?,
        );
        if indexed && !matches!(reply, Ok(Reply::Created(_) | Reply::IdTaken)) {
            reclaim_soon(&mut conn, &due, &packet_id, indexed_at_ms).await;
        }
        return Ok(match reply? {
            Reply::Created(balance_cents) => MerchantPacketOutcome::Created {
                packet: load(store, &packet_id).await?,
                balance_cents,
            },
            Reply::Repeat(id) => MerchantPacketOutcome::Repeat(load(store, &id).await?),
            Reply::OrderReferenceReused(packet_id) => {
                MerchantPacketOutcome::OrderReferenceReused { packet_id }
            }
            Reply::InsufficientFunds(balance_cents) => {
                MerchantPacketOutcome::InsufficientFunds { balance_cents }
            }
            Reply::IdTaken => continue,
            Reply::Late => {
                return Err(Error::Unavailable(
                    "merchant_create_packet was delivered after its window; nothing was created"
                        .into(),
                ))
            }
        });
    }
    Err(Error::Internal("could not draw an unused packet id".into()))
}
