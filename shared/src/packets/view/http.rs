//! `GET /packets/{id}`: a red packet, its grabs and, once no grab can change it, the fairness
//! receipt's reveal (`store::packets::view_as`, `packet_view.lua`).

use axum::extract::State;
use axum::Json;
use serde::Serialize;

use super::store as packets;
use crate::api::error::{rfc3339, ApiError};
use crate::api::extract::{Caller, Path};
use crate::api::operation::{Auth, Method, Operation};
use crate::api::state::ApiState;
use crate::packets::http::{no_packet, PacketBody};
use crate::packets::rules::{Grab, PacketView};

/// The body of `GET /packets/{id}`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct PacketViewBody {
    /// The packet's fields.
    #[serde(flatten)]
    pub packet: PacketBody,
    /// `scheduled`, `open`, `sold_out`, `cancelled`, `expired`, `settled`, or for a draw
    /// packet `entering` and `drawn`.
    #[schema(value_type = crate::packets::rules::Status)]
    pub status: &'static str,
    /// Shares grabbed so far.
    pub grabbed_count: u32,
    /// Sum of grabbed shares, cents.
    pub grabbed_cents: i64,
    /// Refunded at settlement, cents.
    pub refunded_cents: i64,
    /// The first page of grabs in grab order: shares 1 to 100 (those grabbed). The rest, a
    /// page at a time, from `GET /packets/{id}/grabs?cursor=<next_cursor>`.
    pub grabs: Vec<GrabBody>,
    /// Pass as `cursor` to `GET /packets/{id}/grabs` for the next page of grabs (and, once
    /// revealed, of shares); `null` when this page holds the last.
    #[schema(required = true)]
    pub next_cursor: Option<String>,
    /// The caller's own grab of this packet, on whatever page it is; `null` when they grabbed
    /// none.
    #[schema(required = true)]
    pub my_grab: Option<GrabBody>,
    /// The largest share once every share is grabbed, else `null`.
    #[schema(required = true)]
    pub best_luck: Option<BestLuckBody>,
    /// The fairness receipt's proof, once the packet is sold out, expired or settled (absent
    /// while it is scheduled or open): join `shares_cents` of this page and of every next
    /// page (`GET /packets/{id}/grabs`), then check that SHA-256 of
    /// `hongbao-shares-v1:<salt>:<shares_cents joined by ",">` is `commitment`, that the
    /// shares sum to `total_cents`, and that your grab's `share_id` holds your amount.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub reveal: Option<RevealBody>,
    /// A draw packet whose draw is complete: the caller's ticket in it (64 lowercase hex
    /// digits: `HMAC-SHA256(key = the seed's bytes, message = the caller's user id)`), to check
    /// against `draw.threshold`; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, pattern = "^[0-9a-f]{64}$")]
    pub ticket: Option<String>,
}

/// `reveal` of `PacketViewBody`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct RevealBody {
    /// The salt committed to, 64 lowercase hex digits (secret until now).
    #[schema(pattern = "^[0-9a-f]{64}$")]
    pub salt: String,
    /// The page's shares' amounts, cents, in share-id order: shares 1 to 100 in the view
    /// (every share of a packet of at most 100), the cursor's page in
    /// `GET /packets/{id}/grabs`; joined, `count` of them.
    pub shares_cents: Vec<i64>,
}

/// One grab of a packet (`grabs` of `PacketViewBody`).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct GrabBody {
    /// The grabber.
    pub user_id: String,
    /// 1 for the first share grabbed.
    #[schema(minimum = 1)]
    pub share_id: u32,
    /// Cents.
    pub amount_cents: i64,
    /// RFC 3339.
    #[schema(format = DateTime)]
    pub grabbed_at: String,
    /// Whether it was claimed.
    pub claimed: bool,
}

/// `best_luck` of `PacketViewBody`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct BestLuckBody {
    /// The luckiest grabber.
    pub user_id: String,
    /// Their share, cents.
    pub amount_cents: i64,
}

impl From<Grab> for GrabBody {
    fn from(g: Grab) -> Self {
        GrabBody {
            user_id: g.user_id,
            share_id: g.share.share_id,
            amount_cents: g.share.amount_cents,
            grabbed_at: rfc3339(g.share.grabbed_at_ms),
            claimed: g.claimed,
        }
    }
}

impl From<PacketView> for PacketViewBody {
    fn from(v: PacketView) -> Self {
        PacketViewBody {
            packet: PacketBody::from(&v.packet),
            status: v.status.as_str(),
            grabbed_count: v.packet.grabbed_count,
            grabbed_cents: v.packet.grabbed_cents,
            refunded_cents: v.packet.refunded_cents,
            grabs: v.grabs.into_iter().map(GrabBody::from).collect(),
            next_cursor: v.next_cursor.map(|c| c.to_string()),
            my_grab: v.mine.map(GrabBody::from),
            best_luck: v.best_luck.map(|(user_id, amount_cents)| BestLuckBody {
                user_id,
                amount_cents,
            }),
            reveal: v.reveal.map(|r| RevealBody {
                salt: r.salt,
                shares_cents: r.shares_cents,
            }),
            ticket: None,
        }
    }
}

crate::api::refusal::refusals! {
    /// What `GET /packets/{id}` refuses, beside the answers every route shares.
    pub enum ViewRefusal {

        403 ForbiddenError {
            /// a targeted packet, shown only to its sender and recipients
            Forbidden = "forbidden",
        }
        404 NotFoundError {
            /// no such packet
            NotFound = "not_found",
        }
    }
}

/// `GET /packets/{id}` (JWT): the template's `ViewPacket` event.
pub const OPERATION: Operation = Operation {
    event: "ViewPacket",
    method: Method::Get,
    path: "/packets/{id}",
    auth: Auth::Jwt,
    refusals: ViewRefusal::REFUSALS,
    replay: None,
};

/// `GET /packets/{id}`: 200 [`PacketViewBody`]; or a [`ViewRefusal`].
#[utoipa::path(
    get, path = OPERATION.path, tag = "red packets", operation_id = "view_packet",
    summary = "View a red packet",
    description = "The packet, its status, the caller's own grab, the first page of its grabs in grab order (100 shares; the rest from `GET /packets/{id}/grabs`) and, once every share is grabbed, the best luck. A targeted packet is shown only to its sender and recipients. Its cost does not grow with the packet's size.",
    params(("id" = String, Path, description = "packet id, 24 hex digits", pattern = "^[0-9a-f]{24}$")),
    responses(
        (status = 200, description = "the packet, its grabs and best luck", body = PacketViewBody),
    )
)]
pub(crate) async fn view(
    State(state): State<ApiState>,
    Caller(viewer): Caller,
    Path(id): Path<String>,
) -> Result<Json<PacketViewBody>, ApiError> {
    match packets::view_as(&state.store, &id, &viewer, 1).await? {
        packets::ViewAs::Found(v) => {
            let ticket = v
                .packet
                .draw
                .as_ref()
                .filter(|d| d.result.is_some())
                .and_then(|d| crate::draws::rules::ticket(&d.seed, &viewer));
            Ok(Json(PacketViewBody {
                ticket,
                ..(*v).into()
            }))
        }
        packets::ViewAs::NotFound => Err(ViewRefusal::NotFound.because(no_packet(&id))),
        packets::ViewAs::Forbidden => Err(ViewRefusal::Forbidden
            .because("this red packet is shown only to its sender and recipients")),
    }
}
