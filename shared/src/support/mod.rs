//! Support look-ups: what an operator needs to answer a ticket ("I grabbed 1.94 but never got
//! it"), read-only, without `redis-cli` or the key layout, over HTTP (AWS_IAM, callers in
//! `HONGBAO_SUPPORT_PRINCIPALS`), served by the wallet function beside its other IAM routes.
//! One folder per operation, its handler `http.rs` beside its store step `mod.rs`:
//!
//! | route | folder | reads |
//! | --- | --- | --- |
//! | `GET /support/packets/{id}` | [`packet`](mod@packet) | `packet_view.lua` (the packet as its sender sees it, its claims), each pending claim's credit record on the grabber's slot, the reclaim index, the journals that can mention it |
//! | `GET /support/coupons/{code}` | [`coupon`](mod@coupon) | the code's campaign and issuing pool (generated codes by their number and index, uploaded codes by the directory), its record and release memories in that pool, the pool's tag journal |
//! | `GET /support/wallets/{user_id}` | [`wallet`](mod@wallet) | the balance, a ledger page, the pinned claim records with their packets' claim states, the wallet's tag journal |
//!
//! Nothing here writes, and no answer carries a secret: a packet's password verifier and the
//! idempotency records' fingerprints stay in Redis (amounts come from the grab records). The
//! journals hold only the entries not yet exported (ledger-export deletes an entry once
//! EventBridge accepted it): exported movements are on the event bus and in its archive
//! ([`store`]).

pub mod coupon;
pub mod packet;
pub mod store;
pub mod wallet;

use serde::Serialize;

use crate::api::error::{rfc3339, ApiError};
use crate::api::operation::Routes;
use crate::api::state::ApiState;
use crate::domain::journal::Entry;
use utoipa_axum::routes;

pub use coupon::http::{SupportCouponBody, SupportReleaseBody};
pub use coupon::{coupon, CouponLookup, ReleaseLookup};
pub use packet::http::{SupportGrabBody, SupportPacketBody, SupportRefundBody};
pub use packet::{packet, GrabLookup, PacketLookup};
pub use wallet::http::{PendingTransferBody, SupportWalletBody};
pub use wallet::{wallet, PendingTransfer, WalletLookup};

/// The support routes (the wallet function serves them).
pub fn routes() -> Routes {
    Routes::new()
        .route(
            &packet::http::OPERATION,
            routes!(packet::http::support_packet),
        )
        .route(
            &wallet::http::OPERATION,
            routes!(wallet::http::support_wallet),
        )
        .route(
            &coupon::http::OPERATION,
            routes!(coupon::http::support_coupon),
        )
}

/// A grab's claim, as a support look-up shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(as = ClaimState)]
pub enum ClaimStateBody {
    /// Not claimed.
    Unclaimed,
    /// Accepted; the wallet credit or the `done` mark is not recorded yet (the next claim
    /// call or reclaim-cron finishes it).
    Pending,
    /// Credited and marked done by a claim call.
    Done,
    /// Left pending when the claim window closed, credited and marked done by reclaim-cron.
    Redriven,
}

impl From<crate::packets::rules::ClaimState> for ClaimStateBody {
    fn from(c: crate::packets::rules::ClaimState) -> Self {
        use crate::packets::rules::ClaimState;
        match c {
            ClaimState::Unclaimed => ClaimStateBody::Unclaimed,
            ClaimState::Pending { .. } => ClaimStateBody::Pending,
            ClaimState::Done { .. } => ClaimStateBody::Done,
            ClaimState::Redriven { .. } => ClaimStateBody::Redriven,
        }
    }
}

/// Refuses a caller that is not an AWS_IAM-signed principal of `HONGBAO_SUPPORT_PRINCIPALS`.
///
/// # Errors
/// 403 `forbidden` naming the setting.
pub(crate) fn check_caller(state: &ApiState, arn: Option<&str>) -> Result<(), ApiError> {
    let principals = &state.store.config().wallet.support_principals;
    if arn.is_some_and(|arn| principals.allows(arn)) {
        Ok(())
    } else {
        Err(ApiError::forbidden(
            "support look-ups are answered only to AWS_IAM-signed calls of the principals in \
             HONGBAO_SUPPORT_PRINCIPALS",
        ))
    }
}

/// One unexported money-journal entry (`lua/journal.lua`), as ledger-export will publish it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct JournalEntryBody {
    /// The entry's id in its journal (a Redis stream id, `<ms>-<seq>`).
    pub stream_id: String,
    /// The movement's id (40 hex digits), the `event_id` of its EventBridge event.
    #[schema(pattern = "^[0-9a-f]{40}$")]
    pub event_id: String,
    /// `deposit`, `packet_debit`, `claim_credit`, `refund_credit`, `withdrawal`,
    /// `packet_settled`, `packet_cancelled`, `coupon_issued`, `coupon_redeemed`,
    /// `coupon_released`, `campaign_ended`, or a merchant's `merchant_deposit`,
    /// `merchant_withdrawal`, `merchant_packet_debit`, `merchant_refund`,
    /// `merchant_packet_settled`, `merchant_coupon_refund`, or a draw packet's `draw_run`.
    #[schema(value_type = crate::domain::journal::Kind)]
    pub kind: &'static str,
    /// Whose wallet moved; for a merchant's kind, the merchant whose budget moved.
    pub user_id: String,
    /// Signed amount, cents (debits negative; 0 for the packet and coupon events).
    pub amount_cents: i64,
    /// The deposit or withdrawal reference, the packet id, or `<campaign_id>/<code>`.
    pub reference: String,
    /// RFC 3339 (Redis `TIME`).
    #[schema(format = DateTime)]
    pub at: String,
    /// The wallet's (a merchant's kind: the budget's) balance after the movement, cents.
    pub balance_cents: i64,
}

impl From<Entry> for JournalEntryBody {
    fn from(e: Entry) -> Self {
        JournalEntryBody {
            stream_id: e.stream_id,
            event_id: e.event_id,
            kind: e.kind.as_str(),
            user_id: e.user_id,
            amount_cents: e.amount_cents,
            reference: e.reference,
            at: rfc3339(e.at_ms),
            balance_cents: e.balance_cents,
        }
    }
}
