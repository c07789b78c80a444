//! Support look-ups over HTTP (AWS_IAM, callers in `HONGBAO_SUPPORT_PRINCIPALS`), served by the
//! wallet function beside its other IAM routes; one handler per operation, named as the
//! store's ([`crate::store::support`]).
//!
//! | route | handler |
//! | --- | --- |
//! | `GET /support/coupons/{code}` | [`coupon`](mod@coupon) |
//! | `GET /support/packets/{id}` | [`packet`](mod@packet) |
//! | `GET /support/wallets/{user_id}` | [`wallet`](mod@wallet) |
//!
//! Read-only, and no answer carries a secret: a packet's password verifier and the
//! idempotency records' fingerprints are never read into one.

pub mod coupon;
pub mod packet;
pub mod wallet;

use serde::Serialize;

use super::error::{rfc3339, ApiError};
use super::operation::Routes;
use super::state::ApiState;
use crate::domain::journal::Entry;
use utoipa_axum::routes;

pub use coupon::{SupportCouponBody, SupportReleaseBody};
pub use packet::{SupportGrabBody, SupportPacketBody, SupportRefundBody};
pub use wallet::{PendingTransferBody, SupportWalletBody};

/// The support routes (the wallet function serves them).
pub fn routes() -> Routes {
    Routes::new()
        .route(&packet::OPERATION, routes!(packet::support_packet))
        .route(&wallet::OPERATION, routes!(wallet::support_wallet))
        .route(&coupon::OPERATION, routes!(coupon::support_coupon))
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
