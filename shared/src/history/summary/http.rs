//! `GET /packets/summary`: the caller's yearly red-packet totals ([`super::store::summary`]).

use axum::extract::{RawQuery, State};
use axum::Json;
use serde::Serialize;

use super::store;
use crate::api::error::ApiError;
use crate::api::extract::{query_params, Caller};
use crate::api::operation::{Auth, Method, Operation};
use crate::api::state::ApiState;
use crate::history::rules::{self as history, parse_year, Totals};

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

/// `GET /packets/summary` (JWT): the template's `PacketSummary` event.
pub const OPERATION: Operation = Operation {
    event: "PacketSummary",
    method: Method::Get,
    path: "/packets/summary",
    auth: Auth::Jwt,
    refusals: crate::api::refusal::Refusals::NONE,
    replay: None,
};

/// `GET /packets/summary`: the caller's yearly totals, over the history entries kept
/// (`HONGBAO_HISTORY_RETENTION_DAYS`).
#[utoipa::path(
    get, path = OPERATION.path, tag = "red packets", operation_id = "packet_summary",
    summary = "The caller's yearly red-packet totals",
    description = "Count and sum of the packets the caller sent and the shares they claimed in a business year, over the history entries kept (`HONGBAO_HISTORY_RETENTION_DAYS`).",
    params(
        ("year" = Option<i32>, Query, description = "business year in `HONGBAO_BUSINESS_TZ`, 1970..=9999; default: the current one", minimum = 1970, maximum = 9999)
    ),
    responses(
        (status = 200, description = "the caller's totals of that year", body = SummaryBody),
        (status = 400, description = "`invalid_request`: nothing written", body = crate::api::schemas::InvalidRequestError),
    )
)]
pub(crate) async fn summary(
    State(state): State<ApiState>,
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

/// Checks the query of `GET /packets/summary`: `year` at most once, nothing else.
///
/// # Errors
/// 400 `invalid_request` naming the parameter.
pub(crate) fn parse_summary_query(query: Option<&str>) -> Result<Option<i32>, ApiError> {
    let mut year = None;
    query_params(query, &["year"], "year", |_, value| {
        year = Some(parse_year(value)?);
        Ok(())
    })?;
    Ok(year)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_queries() {
        assert_eq!(parse_summary_query(None).unwrap(), None);
        assert_eq!(parse_summary_query(Some("year=2026")).unwrap(), Some(2026));
        for bad in ["year=26", "year=2026&year=2026", "y=2026", "year="] {
            assert!(parse_summary_query(Some(bad)).is_err(), "{bad}");
        }
    }
}
