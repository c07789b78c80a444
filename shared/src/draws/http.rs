//! A draw as the API shows it (`GET /packets/{id}`, `GET /campaigns/{id}`).

use serde::Serialize;

use crate::api::error::rfc3339;
use crate::draws::rules::Draw;

/// A draw packet's or campaign's draw: its commitment from creation, and once the draw is complete its
/// seed and figures, with which every entrant checks the result: the seed
/// hashes to `commitment` (`SHA-256("hongbao-draw-v1:" + seed)`), a ticket is
/// `HMAC-SHA256(key = the seed's bytes, message = user_id)` in hex, and an entrant won exactly
/// when their ticket is at most `threshold`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct DrawBody {
    /// RFC 3339: entries close and the draw happens (Redis `TIME`).
    #[schema(format = DateTime)]
    pub draw_at: String,
    /// Lowercase hex SHA-256 of `hongbao-draw-v1:<seed hex>`, fixed at creation.
    #[schema(pattern = "^[0-9a-f]{64}$")]
    pub commitment: String,
    /// The seed, 64 lowercase hex digits; absent until the draw is complete.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, pattern = "^[0-9a-f]{64}$")]
    pub seed: Option<String>,
    /// How many users entered; absent until the draw is complete.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub entrants: Option<u64>,
    /// How many won (`min(count, entrants)`, a campaign's count its codes); absent until the draw is complete.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub winners: Option<u64>,
    /// The largest winning ticket (64 lowercase hex digits); absent until the draw is
    /// complete, and when nobody entered.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, pattern = "^[0-9a-f]{64}$")]
    pub threshold: Option<String>,
    /// RFC 3339: when the draw completed; absent until then.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, format = DateTime)]
    pub drawn_at: Option<String>,
}

impl From<&Draw> for DrawBody {
    fn from(d: &Draw) -> Self {
        let result = d.result.as_ref();
        DrawBody {
            draw_at: rfc3339(d.draw_at_ms),
            commitment: d.commitment.clone(),
            // The seed only once the draw is complete: before, it would tell who wins.
            seed: result.map(|_| d.seed.clone()),
            entrants: result.map(|r| r.entrants),
            winners: result.map(|r| r.winners),
            threshold: result.and_then(|r| r.threshold.clone()),
            drawn_at: result.map(|r| rfc3339(r.drawn_at_ms)),
        }
    }
}
