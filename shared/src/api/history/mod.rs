//! A user's red-packet history over HTTP, served by the grab function:
//!
//! | route | answer | errors |
//! | --- | --- | --- |
//! | `GET /packets?role=sent\|received&limit=1..100&cursor=` | 200 [`HistoryBody`], newest first | 400 (bad `role`, `limit`, `cursor`, unknown parameter) |
//! | `GET /packets/summary?year=2026` | 200 [`SummaryBody`] | 400 (bad `year`) |
//!
//! Both read the caller's own history only (the caller is the JWT `sub`).

use axum::extract::{RawQuery, State};
use axum::Json;
use serde::Serialize;

use super::config::AppState;
use super::error::{rfc3339, ApiError};
use super::extract::Caller;
use crate::domain::history::{
    self, parse_limit, parse_year, Cursor, Entry, ReceivedEntry, Role, SentEntry, Totals,
    DEFAULT_LIMIT,
};
use crate::store::history as store;

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
    #[schema(value_type = super::schemas::ModeDoc)]
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

/// `GET /packets`: a page of the caller's sent or received red packets, newest first.
/// Paging is stable while new packets arrive: a cursor never repeats or skips an item.
#[utoipa::path(
    get, path = "/packets", tag = "red packets", operation_id = "list_packets",
    summary = "List the caller's sent or received red packets",
    description = "A page of the caller's sent packets (`role=sent`) or claimed shares (`role=received`), newest first. Paging is stable while new packets arrive: a cursor never repeats or skips an item.",
    params(
        ("role" = super::schemas::RoleDoc, Query, description = "`sent` (packets the caller created) or `received` (shares the caller claimed)"),
        ("limit" = Option<u32>, Query, description = "items per page, 1..=100, default 20", minimum = 1, maximum = 100),
        ("cursor" = Option<String>, Query, description = "`next_cursor` of the previous page of the same role (opaque)")
    ),
    responses(
        (status = 200, description = "a page of the caller's history", body = HistoryBody),
        (status = 400, description = "`invalid_request`: nothing written", body = super::schemas::InvalidRequestError),
    )
)]
pub(crate) async fn list(
    State(state): State<AppState>,
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

/// Count and sum of one list (`sent` or `received` of `SummaryBody`).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct TotalsBody {
    /// Items.
    pub count: u64,
    /// Sum of `total_cents` (sent) or `amount_cents` (received), cents.
    pub total_cents: i64,
}

impl From<Totals> for TotalsBody {
    fn from(t: Totals) -> Self {
        TotalsBody {
            count: t.count,
            total_cents: t.total_cents,
        }
    }
}

/// The body of `GET /packets/summary`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct SummaryBody {
    /// The business year (`HONGBAO_BUSINESS_TZ`).
    pub year: i32,
    /// Packets the caller sent that year.
    pub sent: TotalsBody,
    /// Shares the caller claimed that year.
    pub received: TotalsBody,
}

/// `GET /packets/summary`: the caller's yearly totals, over the history entries kept
/// (`HONGBAO_HISTORY_RETENTION_DAYS`).
#[utoipa::path(
    get, path = "/packets/summary", tag = "red packets", operation_id = "packet_summary",
    summary = "The caller's yearly red-packet totals",
    description = "Count and sum of the packets the caller sent and the shares they claimed in a business year, over the history entries kept (`HONGBAO_HISTORY_RETENTION_DAYS`).",
    params(
        ("year" = Option<i32>, Query, description = "business year in `HONGBAO_BUSINESS_TZ`, 1970..=9999; default: the current one", minimum = 1970, maximum = 9999)
    ),
    responses(
        (status = 200, description = "the caller's totals of that year", body = SummaryBody),
        (status = 400, description = "`invalid_request`: nothing written", body = super::schemas::InvalidRequestError),
    )
)]
pub(crate) async fn summary(
    State(state): State<AppState>,
    Caller(user): Caller,
    RawQuery(query): RawQuery,
) -> Result<Json<SummaryBody>, ApiError> {
    let year = match parse_summary_query(query.as_deref())? {
        Some(y) => y,
        None => history::year_of(
            &state.store.config().history.tz,
            chrono::Utc::now().timestamp_millis(),
        ),
    };
    let s = store::summary(&state.store, &user, year).await?;
    Ok(Json(SummaryBody {
        year: s.year,
        sent: s.sent.into(),
        received: s.received.into(),
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
    for (name, value) in url::form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        let twice = || ApiError::invalid(format!("{name} is given twice"));
        match name.as_ref() {
            "role" => {
                if role.is_some() {
                    return Err(twice());
                }
                role = Some(
                    Role::parse(&value)
                        .ok_or_else(|| ApiError::invalid("role must be `sent` or `received`"))?,
                );
            }
            "limit" => {
                if limit.is_some() {
                    return Err(twice());
                }
                limit = Some(parse_limit(&value)?);
            }
            "cursor" => {
                if cursor.is_some() {
                    return Err(twice());
                }
                cursor = Some(value.into_owned());
            }
            other => {
                return Err(ApiError::invalid(format!(
                    "unknown query parameter {:?} (only role, limit and cursor)",
                    super::extract::shown(other)
                )))
            }
        }
    }
    let role = role.ok_or_else(|| ApiError::invalid("role is required: `sent` or `received`"))?;
    let cursor = cursor.map(|c| Cursor::parse(role, &c)).transpose()?;
    Ok(ListQuery {
        role,
        limit: limit.unwrap_or(DEFAULT_LIMIT),
        cursor,
    })
}

/// Checks the query of `GET /packets/summary`: `year` at most once, nothing else.
///
/// # Errors
/// 400 `invalid_request` naming the parameter.
pub(crate) fn parse_summary_query(query: Option<&str>) -> Result<Option<i32>, ApiError> {
    let mut year = None;
    for (name, value) in url::form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        match name.as_ref() {
            "year" if year.is_none() => year = Some(parse_year(&value)?),
            "year" => return Err(ApiError::invalid("year is given twice")),
            other => {
                return Err(ApiError::invalid(format!(
                    "unknown query parameter {:?} (only year)",
                    super::extract::shown(other)
                )))
            }
        }
    }
    Ok(year)
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
        assert_eq!(parse_summary_query(None).unwrap(), None);
        assert_eq!(parse_summary_query(Some("year=2026")).unwrap(), Some(2026));
        for bad in ["year=26", "year=2026&year=2026", "y=2026", "year="] {
            assert!(parse_summary_query(Some(bad)).is_err(), "{bad}");
        }
    }
}
