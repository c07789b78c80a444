//! `POST /order-codes`: the next order codes of the business day
//! ([`super::store::next_codes`], `order_code.lua`).

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};

use super::store::next_codes as take_codes;
use crate::api::error::ApiError;
use crate::api::extract::{Caller, OptionalJsonBody};
use crate::api::metrics;
use crate::api::operation::{Auth, Method, Operation};
use crate::api::refusal::Day;
use crate::api::state::ApiState;
use crate::order_codes::rules::{Outcome, MAX_BATCH};

/// The body of `POST /order-codes`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CountBody {
    /// Codes to take, `1..=100` (default 1).
    #[serde(default = "one_code")]
    #[schema(minimum = 1, maximum = 100, default = 1)]
    count: i64,
}

fn one_code() -> i64 {
    1
}

/// The number of codes a `POST /order-codes` body asks for: no body means 1, otherwise
/// `{"count": N}` with an integer `N` in `1..=100` (`count` may be left out). The body's JSON
/// shape is checked by [`OptionalJsonBody`].
///
/// # Errors
/// 400 `invalid_request` for an out-of-range `count`.
pub(crate) fn order_code_count(body: Option<CountBody>) -> Result<u32, ApiError> {
    let Some(b) = body else {
        return Ok(1);
    };
    match u32::try_from(b.count) {
        Ok(n) if (1..=MAX_BATCH).contains(&n) => Ok(n),
        _ => Err(ApiError::invalid(format!(
            "count must be an integer 1..={MAX_BATCH}"
        ))),
    }
}

/// The answer: the business day and the codes.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CodesBody {
    /// The business day, `YYYY-MM-DD`.
    #[schema(format = Date)]
    pub date: String,
    /// `count` codes, `yyMMdd` + suffix, in the day's order.
    pub codes: Vec<String>,
}

crate::api::refusal::refusals! {
    /// What `POST /order-codes` refuses, beside the answers every route shares.
    pub enum NextCodesRefusal {

        /// 429: the caller's daily order-code quota would be passed; none taken. `Retry-After`
        /// is the time to the next business day.
        429 QuotaExceededError retry_after "seconds to wait before retrying" {
            /// the caller's daily quota would be passed (`date`); none taken; `Retry-After` is the
            /// time to the next business day
            RateLimited = "rate_limited" {
                /// The business day, `YYYY-MM-DD`.
                date: Day,
            },
        }
        /// 503: Redis trouble; retry after `Retry-After` seconds (the body's `message` says what
        /// a retry does where that is not obvious).
        503 UnavailableError in OrderCodesUnavailableError retry_after "seconds to wait before retrying" {
            /// Redis trouble (the body's `message` says what a retry does where that is not
            /// obvious)
            Unavailable = "unavailable",
        }
        /// 503: fewer than `count` order codes are left today; none taken. `Retry-After` is the
        /// time to the next business day.
        503 ExhaustedError in OrderCodesUnavailableError {
            /// fewer than `count` codes are left today (`date`; `Retry-After` is the time to the
            /// next business day)
            Exhausted = "exhausted" {
                /// The business day, `YYYY-MM-DD`.
                date: Day,
            },
        }
    }
}

/// `POST /order-codes` (JWT): the template's `NextOrderCode` event.
pub const OPERATION: Operation = Operation {
    event: "NextOrderCode",
    method: Method::Post,
    path: "/order-codes",
    auth: Auth::Jwt,
    refusals: NextCodesRefusal::REFUSALS,
    replay: None,
};

/// `POST /order-codes` with an optional body `{"count": N}` (`1..=100`, default 1), any
/// authenticated caller (see [`crate::order_codes`]).
/// 201 [`CodesBody`], or a [`NextCodesRefusal`].
#[utoipa::path(
    post, path = OPERATION.path, tag = "order codes", operation_id = "next_order_codes",
    summary = "Take the next order codes of the day",
    description = "Takes `count` (default 1) unique order codes of the current business day, all or none. The body is optional: none (or an empty one) means one code.",
    request_body(content = CountBody, description = "optional; no body (or an empty one) means one code"),
    responses(
        (status = 201, description = "the codes, all or none", body = CodesBody),
        (status = 400, description = "`invalid_request`: nothing written", body = crate::api::schemas::InvalidRequestError),
    )
)]
pub(crate) async fn next_codes(
    State(state): State<ApiState>,
    Caller(user): Caller,
    OptionalJsonBody(body): OptionalJsonBody<CountBody>,
) -> Result<(StatusCode, Json<CodesBody>), ApiError> {
    let count = order_code_count(body)?;
    match take_codes(&state.store, &user, count).await? {
        Outcome::Issued { date, codes } => {
            metrics::count(metrics::ORDER_CODES_TAKEN, codes.len() as u64);
            Ok((
                StatusCode::CREATED,
                Json(CodesBody {
                    date: date.to_string(),
                    codes,
                }),
            ))
        }
        Outcome::Exhausted {
            date,
            retry_after_secs,
        } => Err(NextCodesRefusal::Exhausted {
            date: Day(date.to_string()),
        }
        .because(format!(
            "fewer than {count} order codes are left for {date}; the next business day \
                 starts in {retry_after_secs} s"
        ))
        .retry_after(retry_after_secs)),
        Outcome::QuotaExceeded {
            date,
            used,
            retry_after_secs,
        } => Err(NextCodesRefusal::RateLimited {
            date: Day(date.to_string()),
        }
        .because(quota_message(
            count,
            state.store.config().order_codes.per_user_per_day,
            &date,
            used,
            retry_after_secs,
        ))
        .retry_after_ms((retry_after_secs * 1000) as i64)),
    }
}

/// The message of a 429 for a caller's daily quota: `count` more codes would pass `per_day`
/// of `date`, `used` taken, the next business day in `retry_after_secs`.
fn quota_message(
    count: u32,
    per_day: impl std::fmt::Display,
    date: &impl std::fmt::Display,
    used: impl std::fmt::Display,
    retry_after_secs: u64,
) -> String {
    format!(
        "{count} more order codes would pass your {per_day} of {date} \
         (HONGBAO_ORDER_CODES_PER_USER_PER_DAY; {used} taken); the next business day \
         starts in {retry_after_secs} s"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The quota message is one line with single spaces (it carried two runs of 18 spaces).
    #[test]
    fn quota_message_is_one_line() {
        let m = quota_message(3, 10, &"2026-02-17", 9, 3600);
        assert_eq!(
            m,
            "3 more order codes would pass your 10 of 2026-02-17 \
             (HONGBAO_ORDER_CODES_PER_USER_PER_DAY; 9 taken); the next business day starts in \
             3600 s"
        );
        assert!(!m.contains("  "), "{m:?}");
    }
}
