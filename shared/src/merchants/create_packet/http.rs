//! `POST /merchant-packets` (AWS_IAM): a merchant's red packet for one of its orders, paid
//! from its budget, for the customer to share (`merchants::create_packet`,
//! `merchant_create_packet.lua`).

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::Serialize;

use super::store;
use crate::api::error::ApiError;
use crate::api::extract::{IamPrincipal, JsonBody};
use crate::api::metrics;
use crate::api::operation::{Auth, Method, Operation, Tenant};
use crate::api::replay::{Changed, Replay, Replayed};
use crate::api::state::ApiState;
use crate::merchants::rules::{MerchantPacketOutcome, MerchantPacketRequest};
use crate::packets::http::PacketBody;

crate::api::refusal::refusals! {
    /// What `POST /merchant-packets` refuses, beside the answers every route shares (403 `forbidden` for a caller outside its principals).
    pub enum MerchantPacketRefusal {

        402 MerchantInsufficientFundsError {
            /// the budget's balance is below `total_cents` (`balance_cents`); nothing written
            InsufficientFunds = "insufficient_funds" {
                /// The budget's balance, cents.
                balance_cents: i64,
            },
        }
        409 OrderReferenceReusedError {
            /// the order has a packet from another body (`packet_id`); nothing written
            OrderReferenceReused = "order_reference_reused" {
                /// The order's packet.
                packet_id: String,
            },
        }
    }
}

/// `POST /merchant-packets` (AWS_IAM, `HONGBAO_MERCHANT_PRINCIPALS`): the template's `MerchantCreatePacket` event.
pub const OPERATION: Operation = Operation {
    event: "MerchantCreatePacket",
    method: Method::Post,
    path: "/merchant-packets",
    auth: Auth::Iam {
        principals: &crate::merchants::rules::MERCHANT_PRINCIPALS,
        tenant: Tenant::Merchant("the body's `merchant_id`"),
    },
    refusals: MerchantPacketRefusal::REFUSALS,
    replay: Some(Replay {
        key: "the merchant and the `order_reference`",
        kept: "the packet's life, `HONGBAO_RETENTION_SECS` after it, and at least `HONGBAO_IDEMPOTENCY_TTL_SECS`",
        changed: Changed::Refused("order_reference_reused"),
        also: "`repeat: true`",
    }),
};

/// The answer to `POST /merchant-packets`: the packet, as every packet answer shows it, and
/// its order.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct MerchantPacketBody {
    /// The packet (`merchant_id`, `sharer_id` and `payout` set).
    #[serde(flatten)]
    pub packet: PacketBody,
    /// The order it belongs to.
    pub order_reference: String,
    /// `true` when the order had this packet already (the same body sent before): nothing
    /// was debited now.
    pub repeat: bool,
}

/// `POST /merchant-packets` (AWS_IAM): 201 [`MerchantPacketBody`] (200 for the order's packet
/// made before by the same body); or a [`MerchantPacketRefusal`].
#[utoipa::path(
    post, path = OPERATION.path, tag = "merchants", operation_id = "merchant_create_packet",
    summary = "Create an order's packet from a budget (AWS_IAM)",
    description = "Debits the merchant's budget the total and creates the red packet of one order, for the customer `sharer_id` to share to their group; any signed-in user holding the link grabs it with `POST /packets/{id}/grab`, one share each, and claims it with `POST /packets/{id}/claim` (`payout: wallet`: into their wallet; `payout: coupon`: as their coupon worth the share, with the `coupon` terms, in `GET /coupons` and redeemed at checkout through the coupon routes until `redeem_by`, never cash). One packet per merchant and order: the same body again answers 201 and the same packet with `Idempotent-Replayed: true`, debited once; another body under that order is 409. With `sharer_first`, the sharer's share is taken at creation. Un-grabbed and unclaimed shares go back to the merchant's budget at expiry, coupons never redeemed at their `redeem_by` (and a redemption reversed after it), never to the sharer. Only AWS_IAM-signed calls of the principals in `HONGBAO_MERCHANT_PRINCIPALS`.",
    request_body = crate::merchants::rules::MerchantPacketRequest,
    security(("sigv4" = [])),
    responses(
        (status = 201, description = "created, the budget debited (or, with `Idempotent-Replayed: true` and `repeat: true`, the order's packet made before by the same body: nothing debited now)", body = MerchantPacketBody),
        (status = 400, description = "`invalid_request`: nothing written", body = crate::api::schemas::InvalidRequestError),
    )
)]
pub(crate) async fn create_packet(
    State(state): State<ApiState>,
    IamPrincipal(arn): IamPrincipal,
    body: Result<JsonBody<MerchantPacketRequest>, ApiError>,
) -> Result<(StatusCode, Replayed, Json<MerchantPacketBody>), ApiError> {
    crate::merchants::http::check_principal(&state, arn.as_deref())?;
    let JsonBody(req) = body?;
    let new = req.check(&state.store.config().packets)?;
    crate::merchants::http::check_merchant(&state, arn.as_deref(), &new.merchant_id)?;
    let outcome = store::create_packet(&state.store, &new)
        .await
        .map_err(|e| {
            ApiError::from(e).on_unavailable(
                "the packet may have been created: sending the same body again answers the order's packet, debited once",
            )
        })?;
    let (packet, repeat) = match outcome {
        MerchantPacketOutcome::Created {
            packet,
            balance_cents,
        } => {
            metrics::count(metrics::PACKET_CREATED, 1);
            metrics::count(
                metrics::PACKET_CREATED_CENTS,
                packet.total_cents.max(0) as u64,
            );
            crate::merchants::http::note_balance(&state, &new.merchant_id, balance_cents, false);
            (packet, false)
        }
        MerchantPacketOutcome::Repeat(p) => (p, true),
        MerchantPacketOutcome::InsufficientFunds { balance_cents } => {
            crate::merchants::http::note_balance(&state, &new.merchant_id, balance_cents, true);
            return Err(
                MerchantPacketRefusal::InsufficientFunds { balance_cents }.because(format!(
                    "the budget's balance, {balance_cents} cents, is below total_cents {}",
                    new.packet.total_cents
                )),
            );
        }
        MerchantPacketOutcome::OrderReferenceReused { packet_id } => {
            return Err(MerchantPacketRefusal::OrderReferenceReused { packet_id }
                .because("this order has a packet made from a different body"))
        }
    };
    Ok((
        StatusCode::CREATED,
        Replayed(repeat),
        Json(MerchantPacketBody {
            packet: PacketBody::from(&packet),
            order_reference: new.order_reference,
            repeat,
        }),
    ))
}
