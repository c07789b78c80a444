//! The HTTP parts every red-packet route shares: the packet body of their answers
//! ([`PacketBody`]), a status's text and the 404 message.

use serde::Serialize;

use crate::api::error::rfc3339;
use crate::api::extract::shown;
use crate::packets::rules::Packet;

/// The packet fields every packet answer carries.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct PacketBody {
    /// 24 hex digits.
    pub packet_id: String,
    /// Who sent it: the user who paid for it, or for a merchant packet the customer who
    /// shares it (`sharer_id`; the merchant paid).
    pub sender_id: String,
    /// A merchant packet's merchant (whose budget paid), else `null`.
    #[schema(required = true)]
    pub merchant_id: Option<String>,
    /// A merchant packet's sharer (the customer who shares it), else `null`.
    #[schema(required = true)]
    pub sharer_id: Option<String>,
    /// A merchant packet's payout of a claimed share, else `null`.
    #[schema(value_type = Option<crate::merchants::rules::Payout>, required = true)]
    pub payout: Option<&'static str>,
    /// A coupon packet's coupon terms (`payout: "coupon"`); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub coupon: Option<PacketCouponBody>,
    /// Total, cents.
    pub total_cents: i64,
    /// Number of shares.
    pub count: u32,
    /// `lucky` or `fixed`.
    #[schema(value_type = crate::domain::split::Mode)]
    pub mode: &'static str,
    /// `double_mean` or `line_cut`; `null` for fixed packets.
    #[schema(value_type = Option<crate::domain::split::LuckySplit>, required = true)]
    pub split: Option<&'static str>,
    /// Greeting or `null`.
    #[schema(required = true)]
    pub greeting: Option<String>,
    /// RFC 3339.
    #[schema(format = DateTime)]
    pub created_at: String,
    /// RFC 3339: the deadline for grabs and claims.
    #[schema(format = DateTime)]
    pub expires_at: String,
    /// RFC 3339: when grabs open (`created_at` unless the packet was scheduled with
    /// `opens_in_secs`).
    #[schema(format = DateTime)]
    pub opens_at: String,
    /// The cover id the sender chose, or `null`.
    #[schema(required = true)]
    pub cover: Option<String>,
    /// The fairness receipt: lowercase hex SHA-256 of
    /// `hongbao-shares-v1:<salt hex>:<c1>,...,<cn>` (the shares in cents, share-id order),
    /// fixed at creation; `reveal` proves it once the packet is no longer open. `null` only
    /// for packets created before receipts.
    #[schema(required = true, pattern = "^[0-9a-f]{64}$")]
    pub commitment: Option<String>,
    /// Whether grabbing it needs its password (the password itself is never shown).
    pub password_protected: bool,
    /// A draw packet's draw (docs/design.md, "Draws"); absent for a first-come packet.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub draw: Option<crate::draws::http::DrawBody>,
}

/// A coupon packet's coupon terms: each claimed share becomes a coupon of its grabber worth
/// the share.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct PacketCouponBody {
    /// The smallest order total a coupon applies to, cents; absent: any order.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, minimum = 1)]
    pub min_order_cents: Option<i64>,
    /// RFC 3339: the coupons are redeemable before this (`expires_at` plus the merchant's
    /// `redeem_within_secs`).
    #[schema(format = DateTime)]
    pub redeem_by: String,
}

impl From<&Packet> for PacketBody {
    fn from(p: &Packet) -> Self {
        PacketBody {
            packet_id: p.packet_id.clone(),
            sender_id: p.sender_id.clone(),
            merchant_id: p.merchant.as_ref().map(|m| m.merchant_id.clone()),
            sharer_id: p.merchant.as_ref().map(|m| m.sharer_id.clone()),
            payout: p.merchant.as_ref().map(|m| m.payout.as_str()),
            coupon: p
                .merchant
                .as_ref()
                .and_then(|m| m.coupon)
                .map(|c| PacketCouponBody {
                    min_order_cents: c.min_order_cents,
                    redeem_by: rfc3339(c.redeem_by_ms),
                }),
            total_cents: p.total_cents,
            count: p.count,
            mode: p.mode.as_str(),
            split: p.split.map(|s| s.as_str()),
            greeting: p.greeting.clone(),
            created_at: rfc3339(p.created_at_ms),
            expires_at: rfc3339(p.expires_at_ms),
            opens_at: rfc3339(p.opens_at_ms),
            cover: p.cover.clone(),
            commitment: p.commitment.clone(),
            password_protected: p.password_verifier.is_some(),
            draw: p.draw.as_ref().map(crate::draws::http::DrawBody::from),
        }
    }
}

/// 404 `not_found` for packet `id` (no such packet, or an id of another shape).
pub(crate) fn no_packet(id: &str) -> String {
    format!("no packet {}", shown(id))
}

/// A packet's status (`sold_out`, ...) as a refusal's field, documented as
/// [`crate::packets::rules::Status`].
#[derive(Debug, Serialize)]
#[serde(transparent)]
pub struct PacketStatus(pub &'static str);

impl crate::api::refusal::RefusalField for PacketStatus {
    fn schema(
        description: &str,
        out: &mut Vec<(String, utoipa::openapi::RefOr<utoipa::openapi::Schema>)>,
    ) -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
        crate::api::refusal::by_ref::<crate::packets::rules::Status>(description, out)
    }
}
