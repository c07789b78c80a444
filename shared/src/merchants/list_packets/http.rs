//! `GET /merchants/{merchant_id}/packets` (AWS_IAM): a merchant's packets, newest first, a
//! page at a time (`crate::merchants::list_packets`).

use axum::extract::{RawQuery, State};
use axum::Json;
use serde::Serialize;

use super::store;
use crate::api::error::ApiError;
use crate::api::extract::{page_query, IamPrincipal, Path};
use crate::api::operation::{Auth, Method, Operation, Tenant};
use crate::api::state::ApiState;

use crate::merchants::http::check_caller;
use crate::merchants::rules::PacketsCursor;
use crate::packets::http::PacketBody;
use crate::packets::rules::PacketView;

/// One of a merchant's packets as `GET /merchants/{merchant_id}/packets` lists it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct MerchantPacketItem {
    /// The packet, as every packet answer shows it.
    #[serde(flatten)]
    pub packet: PacketBody,
    /// The order it belongs to.
    pub order_reference: String,
    /// `scheduled`, `open`, `sold_out`, `expired`, `settled` or `cancelled`, at Redis `TIME`.
    #[schema(value_type = crate::packets::rules::Status)]
    pub status: &'static str,
    /// Shares grabbed.
    pub grabbed_count: u32,
    /// Cents grabbed.
    pub grabbed_cents: i64,
    /// Cents claimed (paid out, or being paid out).
    pub claimed_cents: i64,
    /// Cents refunded to the merchant at expiry.
    pub refunded_cents: i64,
}

impl MerchantPacketItem {
    fn new(v: &PacketView) -> Self {
        let p = &v.packet;
        MerchantPacketItem {
            packet: PacketBody::from(p),
            order_reference: p
                .merchant
                .as_ref()
                .map(|m| m.order_reference.clone())
                .unwrap_or_default(),
            status: v.status.as_str(),
            grabbed_count: p.grabbed_count,
            grabbed_cents: p.grabbed_cents,
            claimed_cents: p.claimed_cents,
            refunded_cents: p.refunded_cents,
        }
    }
}

/// The body of `GET /merchants/{merchant_id}/packets`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct MerchantPacketsBody {
    /// The merchant's packets, newest first. A packet whose keys are gone (its retention
    /// passed) is left out, so a page may hold fewer than `limit` items.
    pub items: Vec<MerchantPacketItem>,
    /// Pass as `cursor` for the next page; `null` only after the last page. Opaque.
    #[schema(required = true)]
    pub next_cursor: Option<String>,
}

/// `GET /merchants/{merchant_id}/packets` (AWS_IAM, `HONGBAO_MERCHANT_PRINCIPALS`): the template's `MerchantListPackets` event.
pub const OPERATION: Operation = Operation {
    event: "MerchantListPackets",
    method: Method::Get,
    path: "/merchants/{merchant_id}/packets",
    auth: Auth::Iam {
        principals: &crate::merchants::rules::MERCHANT_PRINCIPALS,
        tenant: Tenant::Merchant("the path's `merchant_id`"),
    },
    refusals: crate::api::refusal::Refusals::NONE,
    replay: None,
};

/// `GET /merchants/{merchant_id}/packets` (AWS_IAM): 200 [`MerchantPacketsBody`]; 400, 403.
#[utoipa::path(
    get, path = OPERATION.path, tag = "merchants", operation_id = "merchant_list_packets",
    summary = "A merchant's packets (AWS_IAM)",
    description = "A page of the packets the merchant's orders made, newest first, each with its order, status and counters. Paging is stable while packets are created: a cursor never repeats or skips one. Only AWS_IAM-signed calls of the principals in `HONGBAO_MERCHANT_PRINCIPALS`.",
    params(
        ("merchant_id" = String, Path, description = "the merchant: 1 to 64 of `A-Z a-z 0-9 _ . : -`", pattern = "^[A-Za-z0-9_.:-]{1,64}$"),
        ("limit" = Option<u32>, Query, description = "items per page, 1..=100, default 20", minimum = 1, maximum = 100),
        ("cursor" = Option<String>, Query, description = "`next_cursor` of the previous page for the same merchant (opaque)", pattern = "^[0-9]{1,15}-[0-9a-f]{24}$"),
    ),
    security(("sigv4" = [])),
    responses(
        (status = 200, description = "a page of the merchant's packets", body = MerchantPacketsBody),
        (status = 400, description = "`invalid_request`: a bad merchant id, `limit` or `cursor`, or a parameter unknown or given twice", body = crate::api::schemas::InvalidRequestError),
    )
)]
pub(crate) async fn list_packets(
    State(state): State<ApiState>,
    IamPrincipal(arn): IamPrincipal,
    Path(merchant_id): Path<String>,
    RawQuery(query): RawQuery,
) -> Result<Json<MerchantPacketsBody>, ApiError> {
    check_caller(&state, arn.as_deref(), &merchant_id)?;
    let (limit, before) = parse_query(query.as_deref())?;
    let page = store::list_packets(&state.store, &merchant_id, limit, before.as_ref()).await?;
    Ok(Json(MerchantPacketsBody {
        items: page.packets.iter().map(MerchantPacketItem::new).collect(),
        next_cursor: page.next.map(|c| c.text()),
    }))
}

/// Checks the query: `limit` and `cursor`, as [`page_query`].
///
/// # Errors
/// 400 `invalid_request` naming the parameter.
fn parse_query(query: Option<&str>) -> Result<(u32, Option<PacketsCursor>), ApiError> {
    page_query(query, PacketsCursor::parse)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_names_a_creation_time_and_a_packet() {
        let (_, cursor) =
            parse_query(Some("cursor=1795887015772-14f19750de2d840759a4c115")).unwrap();
        assert_eq!(cursor.unwrap().created_at_ms, 1_795_887_015_772);
    }

    #[test]
    fn a_cursor_that_is_no_packet_is_refused() {
        assert!(parse_query(Some("cursor=x")).is_err());
    }
}
