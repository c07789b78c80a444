//! `POST /packets/{id}/cancel`'s store step: one EVALSHA of `cancel.lua` on the packet's
//! hash slot, which is its sender's (the wallet the refund goes to), and its reply parsed into
//! [`CancelOutcome`].

use crate::store::scripts::CancelCall;
use redis::Value;

use crate::packets::rules::{CancelOutcome, Status};
use crate::store::keys::{is_packet_id, user_tag, Keys, PacketKeys, WalletKeys};
use crate::store::scripts::{call_id, int, texts, Call};
use crate::store::{Error, Store};

impl<'a> CancelCall<'a> {
    /// The cancel of packet `packet_id` (its keys `pk`) by `caller_id` (their wallet keys
    /// `wk`): a packet it settles keeps its keys `retention_secs` s, the sender's ledger
    /// `ledger_cap` items; `call` is the call's id.
    pub fn of(
        pk: &'a PacketKeys,
        wk: &'a WalletKeys,
        packet_id: &'a str,
        caller_id: &'a str,
        retention_secs: u64,
        ledger_cap: u32,
        call: &'a str,
    ) -> CancelCall<'a> {
        CancelCall {
            meta: &pk.meta,
            wallet: &wk.wallet,
            ledger: &wk.ledger,
            sent: &wk.sent,
            journal: &wk.journal,
            recipients: &pk.recipients,
            shares: &pk.shares,
            grabs: &pk.grabs,
            claims: &pk.claims,
            tickets: &pk.tickets,
            order: &pk.order,
            open_packets: &wk.open_packets,
            packet_id,
            caller_id,
            ledger_cap,
            retention_secs,
            call,
        }
    }
}

impl CancelCall<'_> {
    /// `cancel.lua`'s reply as a [`CancelOutcome`]; `None` for `draw_due` (run the draw,
    /// then cancel again).
    ///
    /// # Errors
    /// [`Error::Internal`] for a reply of another shape.
    fn outcome(reply: Value) -> Result<Option<CancelOutcome>, Error> {
        let reply = texts("cancel", reply)?;
        Ok(Some(match reply.first().map(String::as_str) {
            Some("draw_due") => return Ok(None),
            Some("cancelled") => CancelOutcome::Cancelled {
                refunded_cents: int("cancel", reply.get(1))?,
                cancelled_at_ms: int("cancel", reply.get(2))?,
                earlier: reply.get(3).map(String::as_str) == Some("1"),
            },
            Some("not_found") => CancelOutcome::NotFound,
            Some("forbidden") => CancelOutcome::Forbidden,
            Some("not_cancellable") => {
                CancelOutcome::NotCancellable(match reply.get(1).map(String::as_str) {
                    Some("sold_out") => Status::SoldOut,
                    Some("expired") => Status::Expired,
                    Some("settled") => Status::Settled,
                    _ => return Err(Error::bad_reply("cancel", format!("{reply:?}"))),
                })
            }
            _ => return Err(Error::bad_reply("cancel", format!("{reply:?}"))),
        }))
    }
}

/// Cancels `packet_id` for `caller_id`, who must be its sender: it stops taking grabs and its
/// un-grabbed shares are refunded to the sender's wallet in the same script (ledger entry
/// `refund_credit`, journal entries `refund_credit` and `packet_cancelled`, the sent history's
/// entry updated), and its recipients set is deleted. Shares already grabbed stay claimable
/// until `expires_at`; reclaim-cron refunds the unclaimed ones then. A packet nobody grabbed
/// is settled by the cancel (`packet_settled` journaled) and its keys kept the retention
/// (`HONGBAO_RETENTION_SECS`) from now. A repeat (a retry, a re-sent call) answers the first
/// cancel's figures and moves nothing.
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached: the packet may have been cancelled; a
/// retry answers with the same figures.
pub async fn cancel(
    store: &Store,
    packet_id: &str,
    caller_id: &str,
) -> Result<CancelOutcome, Error> {
    if !is_packet_id(packet_id) {
        return Ok(CancelOutcome::NotFound);
    }
    let cfg = store.config();
    let keys = Keys::new(&cfg.key_prefix);
    let pk = keys.packet(packet_id);
    let mut conn = store.conn().await?;
    // A packet id starts with its sender's hash tag. A caller of another tag is not the sender
    // (and their wallet is on another hash slot, which one script cannot touch): one read
    // tells not found from forbidden. A caller of the same tag may still not be the sender:
    // the script compares the ids, and names the caller's wallet keys but writes none then.
    if !packet_id.starts_with(&user_tag(caller_id)) {
        let exists: bool = redis::cmd("EXISTS")
            .arg(&pk.meta)
            .query_async(&mut conn)
            .await?;
        return Ok(if exists {
            CancelOutcome::Forbidden
        } else {
            CancelOutcome::NotFound
        });
    }
    let wk = keys.wallet(caller_id);
    let call = call_id();
    // A draw packet past draw_at is drawn first (its winners keep their shares), then
    // cancelled.
    for _ in 0..2 {
        let reply: Value = CancelCall::of(
            &pk,
            &wk,
            packet_id,
            caller_id,
            cfg.packets.retention_secs,
            crate::wallet::rules::LEDGER_CAP,
            &call,
        )
        .invocation()
        .invoke_async(&mut conn)
        .await?;
        match CancelCall::outcome(reply)? {
            Some(outcome) => return Ok(outcome),
            None => {
                crate::packets::draw::run(store, packet_id).await?;
            }
        }
    }
    Err(Error::Internal(format!(
        "cancel of packet {packet_id}: its draw is still due after running it"
    )))
}
