//! `GET /packets`: a page of the caller's sent or received red packets, newest first
//! ([`super::store::page`], `history_page.lua`).

use axum::extract::{RawQuery, State};
use axum::Json;
use serde::Serialize;

use super::store;
use crate::api::error::{rfc3339, ApiError};
use crate::api::extract::{query_params, Caller};
use crate::api::operation::{Auth, Method, Operation};
use crate::api::state::ApiState;
use crate::history::rules::{
    parse_limit, Cursor, Entry, ReceivedEntry, Role, SentEntry, DEFAULT_LIMIT,
};

/// A packet the caller sent (an item of `role=sent`).
#[derive(Debug, Serialize, utoipa::ToSchema)]
// Closed in the document (`additionalProperties: false`, what this attribute tells utoipa):
// the two item shapes never both match.
#[serde(deny_unknown_fields)]
pub struct SentItemBody {
    /// 24 hex digits.
    pub packet_id: String,
    /// Total paid, cents.
    pub total_cents: i64,
    /// Number of shares.
    pub count: u32,
    /// `lucky` or `fixed`.
    #[schema(value_type = crate::domain::split::Mode)]
    pub mode: &'static str,
    /// Greeting or `null`.
    #[schema(required = true)]
    pub greeting: Option<String>,
    /// RFC 3339.
    #[schema(format = DateTime)]
    pub created_at: String,
    /// RFC 3339: the deadline for grabs and claims.
    #[schema(format = DateTime)]
    pub expires_at: String,
    /// Refunded to the caller, cents: at the cancel, then everything at settlement; absent
    /// until either.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub refunded_cents: Option<i64>,
    /// RFC 3339: when grabs open (`created_at` unless scheduled).
    #[schema(format = DateTime)]
    pub opens_at: String,
    /// The cover id, or `null`.
    #[schema(required = true)]
    pub cover: Option<String>,
    /// Whether the caller cancelled it (`refunded_cents` is then the cancel's refund until
    /// settlement, everything refunded after).
    pub cancelled: bool,
    /// Whether grabbing it needs its password.
    pub password_protected: bool,
}

/// A share the caller claimed (money that reached their wallet; an item of `role=received`).
#[derive(Debug, Serialize, utoipa::ToSchema)]
// Closed in the document (`additionalProperties: false`, what this attribute tells utoipa):
// the two item shapes never both match.
#[serde(deny_unknown_fields)]
pub struct ReceivedItemBody {
    /// 24 hex digits.
    pub packet_id: String,
    /// Who paid for the packet.
    pub sender_id: String,
    /// The share, cents.
    pub amount_cents: i64,
    /// 1 for the packet's first share grabbed.
    #[schema(minimum = 1)]
    pub share_id: u32,
    /// RFC 3339: when the claim was made.
    #[schema(format = DateTime)]
    pub claimed_at: String,
}

/// One item of a history page: a sent item for `role=sent`, a received item for
/// `role=received` (every item of a page has the page's role). The two shapes are closed
/// (no other field), so exactly one matches: a sent item has `total_cents`, a received one
/// `sender_id`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum HistoryItemBody {
    /// `role=sent`.
    Sent(SentItemBody),
    /// `role=received`.
    Received(ReceivedItemBody),
}

impl From<Entry> for HistoryItemBody {
    fn from(e: Entry) -> Self {
        match e {
            Entry::Sent(SentEntry {
                packet_id,
                total_cents,
                count,
                mode,
                greeting,
                created_at_ms,
                expires_at_ms,
                refunded_cents,
                opens_at_ms,
                cover,
                cancelled,
                password_protected,
            }) => HistoryItemBody::Sent(SentItemBody {
                packet_id,
                total_cents,
                count,
                mode: mode.as_str(),
                greeting,
                created_at: rfc3339(created_at_ms),
                expires_at: rfc3339(expires_at_ms),
                refunded_cents,
                opens_at: rfc3339(opens_at_ms),
                cover,
                cancelled,
                password_protected,
            }),
            Entry::Received(ReceivedEntry {
                packet_id,
                sender_id,
                amount_cents,
                share_id,
                claimed_at_ms,
            }) => HistoryItemBody::Received(ReceivedItemBody {
                packet_id,
                sender_id,
                amount_cents,
                share_id,
                claimed_at: rfc3339(claimed_at_ms),
            }),
        }
    }
}

/// The body of `GET /packets`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct HistoryBody {
    /// Newest first.
    pub items: Vec<HistoryItemBody>,
    /// Pass as `cursor` for the next page; `null` after the last item. Opaque.
    #[schema(required = true)]
    pub next_cursor: Option<String>,
}

/// `GET /packets` (JWT): the template's `PacketHistory` event.
pub const OPERATION: Operation = Operation {
    event: "PacketHistory",
    method: Method::Get,
    path: "/packets",
    auth: Auth::Jwt,
    refusals: crate::api::refusal::Refusals::NONE,
    replay: None,
};

/// `GET /packets`: a page of the caller's sent or received red packets, newest first.
/// Paging is stable while new packets arrive: a cursor never repeats or skips an item.
#[utoipa::path(
    get, path = OPERATION.path, tag = "red packets", operation_id = "list_packets",
    summary = "List the caller's sent or received red packets",
    description = "A page of the caller's sent packets (`role=sent`) or claimed shares (`role=received`), newest first. Paging is stable while new packets arrive: a cursor never repeats or skips an item.",
    params(
        ("role" = crate::history::rules::Role, Query, description = "`sent` (packets the caller created) or `received` (shares the caller claimed)"),
        ("limit" = Option<u32>, Query, description = "items per page, 1..=100, default 20", minimum = 1, maximum = 100),
        ("cursor" = Option<String>, Query, description = "`next_cursor` of the previous page of the same role (opaque)")
    ),
    responses(
        (status = 200, description = "a page of the caller's history", body = HistoryBody),
        (status = 400, description = "`invalid_request`: nothing written", body = crate::api::schemas::InvalidRequestError),
    )
)]
pub(crate) async fn list(
    State(state): State<ApiState>,
    Caller(user): Caller,
    RawQuery(query): RawQuery,
) -> Result<Json<HistoryBody>, ApiError> {
    let q = parse_list_query(query.as_deref())?;
    let page = store::page(&state.store, &user, q.role, q.limit, q.cursor.as_ref()).await?;
    Ok(Json(HistoryBody {
        items: page.entries.into_iter().map(Into::into).collect(),
        next_cursor: page.next_cursor.as_ref().map(Cursor::encode),
    }))
}

/// The checked query of `GET /packets`.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct ListQuery {
    role: Role,
    limit: u32,
    cursor: Option<Cursor>,
}

/// Checks the query of `GET /packets`: `role` (required), `limit` and `cursor`, each at most
/// once, nothing else.
///
/// # Errors
/// 400 `invalid_request` naming the parameter.
pub(crate) fn parse_list_query(query: Option<&str>) -> Result<ListQuery, ApiError> {
    let (mut role, mut limit, mut cursor) = (None, None, None);
    query_params(
        query,
        &["role", "limit", "cursor"],
        "role, limit and cursor",
        |name, value| {
            match name {
                "role" => {
                    role =
                        Some(Role::parse(value).ok_or_else(|| {
                            ApiError::invalid("role must be `sent` or `received`")
                        })?)
                }
                "limit" => limit = Some(parse_limit(value)?),
                _ => cursor = Some(value.to_string()),
            }
            Ok(())
        },
    )?;
    let role = role.ok_or_else(|| ApiError::invalid("role is required: `sent` or `received`"))?;
    let cursor = cursor.map(|c| Cursor::parse(role, &c)).transpose()?;
    Ok(ListQuery {
        role,
        limit: limit.unwrap_or(DEFAULT_LIMIT),
        cursor,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_queries() {
        let q = parse_list_query(Some("role=sent")).unwrap();
        assert_eq!((q.role, q.limit, q.cursor), (Role::Sent, 20, None));
        let id = "0a1b2c3d4e5f60718293a4b5";
        let q = parse_list_query(Some(&format!("role=received&limit=7&cursor=r12-{id}"))).unwrap();
        assert_eq!((q.role, q.limit), (Role::Received, 7));
        assert_eq!(q.cursor.unwrap().at_ms, 12);
        for bad in [
            None,
            Some(""),
            Some("limit=5"),
            Some("role=both"),
            Some("role=sent&role=sent"),
            Some("role=sent&limit=0"),
            Some("role=sent&limit=101"),
            Some("role=sent&limit=x"),
            Some("role=sent&limit=5&limit=5"),
            Some("role=sent&cursor="),
            Some("role=sent&cursor=r12-0a1b2c3d4e5f60718293a4b5"),
            Some("role=sent&page=2"),
        ] {
            let err = parse_list_query(bad).unwrap_err();
            assert_eq!(err.code, "invalid_request", "{bad:?}");
        }
    }
}
