//! `GET /packets/{id}/grabs?cursor=`: one page of a red packet's grabs and, once no grab can
//! change it, of the fairness receipt's shares (`store::packets::view_as` from the cursor,
//! `packet_view.lua`): what `GET /packets/{id}` shows after its first page, its cost
//! bounded by the page.

use axum::extract::{RawQuery, State};
use axum::Json;
use serde::Serialize;

use crate::api::error::ApiError;
use crate::api::extract::{query_params, Caller, Path};
use crate::api::operation::{Auth, Method, Operation};
use crate::api::state::ApiState;
use crate::packets::http::no_packet;
use crate::packets::view::http::{GrabBody, ViewRefusal};
use crate::packets::view::store as packets;

/// The body of `GET /packets/{id}/grabs`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct GrabsPageBody {
    /// The page's grabs in grab order: those of its 100 shares (from the cursor's share id)
    /// that were grabbed.
    pub grabs: Vec<GrabBody>,
    /// Once the packet is sold out, expired or settled (`reveal` in `GET /packets/{id}`): the
    /// page's shares' amounts, cents, in share-id order, grabbed or not, to join with the
    /// view's `reveal.shares_cents` and the other pages'; absent before.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub shares_cents: Option<Vec<i64>>,
    /// Pass as `cursor` for the next page; `null` after the last.
    #[schema(required = true)]
    pub next_cursor: Option<String>,
}

/// `GET /packets/{id}/grabs` (JWT): the template's `PacketGrabs` event. Refused as
/// `GET /packets/{id}` is.
pub const OPERATION: Operation = Operation {
    event: "PacketGrabs",
    method: Method::Get,
    path: "/packets/{id}/grabs",
    auth: Auth::Jwt,
    refusals: ViewRefusal::REFUSALS,
    replay: None,
};

/// `GET /packets/{id}/grabs`: 200 [`GrabsPageBody`]; 400 for a bad cursor; or a
/// [`ViewRefusal`].
#[utoipa::path(
    get, path = OPERATION.path, tag = "red packets", operation_id = "list_packet_grabs",
    summary = "Page through a red packet's grabs",
    description = "A page of the packet's grabs in grab order (100 shares from the cursor) and, once the packet reveals its fairness receipt, the page's shares. `GET /packets/{id}` shows the first page and the first cursor. Shown to whom the packet is shown.",
    params(
        ("id" = String, Path, description = "packet id, 24 hex digits", pattern = "^[0-9a-f]{24}$"),
        ("cursor" = Option<String>, Query, description = "`next_cursor` of the view or of the previous page (default: the first page)")
    ),
    responses(
        (status = 200, description = "a page of the packet's grabs", body = GrabsPageBody),
        (status = 400, description = "`invalid_request`: nothing written", body = crate::api::schemas::InvalidRequestError),
    )
)]
pub(crate) async fn grabs(
    State(state): State<ApiState>,
    Caller(viewer): Caller,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> Result<Json<GrabsPageBody>, ApiError> {
    let from = parse_cursor(query.as_deref())?;
    match packets::view_as(&state.store, &id, &viewer, from).await? {
        packets::ViewAs::Found(v) => Ok(Json(GrabsPageBody {
            grabs: v.grabs.into_iter().map(GrabBody::from).collect(),
            shares_cents: v.reveal.map(|r| r.shares_cents),
            next_cursor: v.next_cursor.map(|c| c.to_string()),
        })),
        packets::ViewAs::NotFound => Err(ViewRefusal::NotFound.because(no_packet(&id))),
        packets::ViewAs::Forbidden => Err(ViewRefusal::Forbidden
            .because("this red packet is shown only to its sender and recipients")),
    }
}

/// The share id a page starts at: `cursor` (a `next_cursor`: a share id from 1), 1 without
/// one.
///
/// # Errors
/// 400 `invalid_request` for another parameter, a cursor given twice, or one that is not a
/// share id.
pub(crate) fn parse_cursor(query: Option<&str>) -> Result<u32, ApiError> {
    let mut from = 1;
    query_params(query, &["cursor"], "cursor", |_, value| {
        from = value
            .parse::<u32>()
            .ok()
            .filter(|&c| c >= 1 && value.bytes().all(|b| b.is_ascii_digit()))
            .ok_or_else(|| ApiError::invalid("cursor must be a next_cursor this route gave"))?;
        Ok(())
    })?;
    Ok(from)
}

#[cfg(test)]
mod tests {
    use super::parse_cursor;

    #[test]
    fn a_page_starts_at_its_cursor_or_at_the_first_share() {
        assert_eq!(parse_cursor(None).unwrap(), 1);
        assert_eq!(parse_cursor(Some("cursor=101")).unwrap(), 101);
    }

    #[test]
    fn a_cursor_that_is_no_share_id_is_refused() {
        for bad in [
            "cursor=",
            "cursor=0",
            "cursor=-1",
            "cursor=+5",
            "cursor=x",
            "cursor=99999999999",
            "cursor=1&cursor=2",
            "page=2",
        ] {
            let err = parse_cursor(Some(bad)).unwrap_err();
            assert_eq!(err.code, "invalid_request", "{bad}");
        }
    }
}
