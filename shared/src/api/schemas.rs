//! Documentation-only schemas of the OpenAPI document ([`super::openapi`]): the shapes of
//! requests whose Rust type lives in the domain (which knows no HTTP crate) and of the error
//! answer. Never constructed; the handlers parse and answer with their own types.

use utoipa::ToSchema;

/// Every error answer: `{"error": code, "message": text}` plus, for some codes, extra fields
/// (`balance_cents`, `share`, `date`, `limit`, `allow`...).
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct ErrorDoc {
    /// Machine-readable code, e.g. `sold_out`, `rate_limited`, `invalid_request`.
    error: String,
    /// Human-readable explanation.
    message: String,
}

/// The body of `POST /packets`.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct PacketRequestDoc {
    /// Total, cents (integer, `count..=HONGBAO_MAX_TOTAL_CENTS`).
    #[schema(minimum = 1)]
    total_cents: i64,
    /// Number of shares (`1..=HONGBAO_MAX_COUNT`).
    #[schema(minimum = 1)]
    count: i64,
    /// The split: `lucky` (default) or `fixed`.
    mode: Option<ModeDoc>,
    /// The lucky split algorithm (default `double_mean`); lucky packets only.
    split: Option<SplitDoc>,
    /// Seconds until the packet expires (`1..=604800`, default 86400).
    #[schema(minimum = 1, maximum = 604_800)]
    expires_in_secs: Option<i64>,
    /// At most 100 characters, no control or invisible format character.
    #[schema(max_length = 100)]
    greeting: Option<String>,
    /// A targeted packet: the only users who may grab it or see it (besides the sender),
    /// 1 to 500 distinct user ids, at least `count` of them.
    #[schema(min_items = 1, max_items = 500)]
    recipients: Option<Vec<String>>,
}

/// A group name: 1 to 32 characters of `[a-z0-9-]`.
#[derive(ToSchema)]
#[schema(pattern = "^[a-z0-9-]{1,32}$")]
#[allow(dead_code)]
pub struct GroupNameDoc(String);

/// How a packet is split.
#[derive(ToSchema)]
#[schema(rename_all = "lowercase")]
#[allow(dead_code)]
pub enum ModeDoc {
    /// Random amounts (the split algorithm decides).
    Lucky,
    /// Equal amounts (`total_cents` divisible by `count`).
    Fixed,
}

/// The lucky split algorithm.
#[derive(ToSchema)]
#[schema(rename_all = "snake_case")]
#[allow(dead_code)]
pub enum SplitDoc {
    /// WeChat's "double mean": each share uniform in `[1, 2 × remaining mean]`.
    DoubleMean,
    /// Cut points on a line.
    LineCut,
}

/// A vote's direction.
#[derive(ToSchema)]
#[schema(rename_all = "lowercase")]
#[allow(dead_code)]
pub enum DirectionDoc {
    /// +1 vote (+432 score).
    Up,
    /// −1 vote (−432 score).
    Down,
}
