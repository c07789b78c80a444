//! The request handlers of the HTTP functions. Each function's `main` builds one [`Store`] and
//! passes every request to its handler here; handlers never fail (errors become JSON answers).
//!
//! | function | routes |
//! | --- | --- |
//! | create-packet | `POST /packets` |
//! | grab | `GET /packets/{id}`, `POST /packets/{id}/grab` |
//! | claim | `POST /packets/{id}/claim` |
//! | wallet | `GET /wallet`, `POST /wallet/deposits` |
//! | next-order-code | `POST /order-codes` |
//! | vote | `POST /articles`, `GET /articles`, `POST /articles/{id}/vote`, `PUT /articles/{id}/groups`, `GET /groups/{group}/articles` |

use lambda_http::http::StatusCode;
use lambda_http::{Body, Request, Response};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::config::MAX_EXPIRES_IN_SECS;
use crate::http::{self, caller, json_body, json_response, path_id, rfc3339, ApiError, Route};
use crate::packets::{self, ClaimOutcome, CreateOutcome, GrabOutcome, NewPacket, Packet, Share};
use crate::split::{LuckySplit, Mode};
use crate::store::Store;
use crate::wallet::{self, DepositOutcome, MAX_DEPOSIT_CENTS};

/// The longest greeting, characters.
pub const MAX_GREETING_CHARS: usize = 100;

/// Default `expires_in_secs`: one day.
pub const DEFAULT_EXPIRES_IN_SECS: u64 = 86_400;

fn respond(result: Result<Response<Body>, ApiError>) -> Response<Body> {
    result.unwrap_or_else(ApiError::into_response)
}

fn wrong_function(_route: &Route) -> ApiError {
    ApiError::not_found(
        "this function does not serve this route (see the API reference in README.md)",
    )
}

/// Handler of the create-packet function: `POST /packets`.
pub async fn create_packet(store: &Store, req: Request) -> Response<Body> {
    respond(create_packet_inner(store, req).await)
}

/// The body of `POST /packets`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateBody {
    total_cents: i64,
    count: i64,
    #[serde(default)]
    mode: Option<Mode>,
    #[serde(default)]
    split: Option<LuckySplit>,
    #[serde(default)]
    expires_in_secs: Option<i64>,
    #[serde(default)]
    greeting: Option<String>,
}

/// Checks a create request against the contract and the configured limits.
///
/// # Errors
/// 400 `invalid_request` naming the offending field.
pub fn validate_new_packet(
    cfg: &crate::config::Config,
    body: &[u8],
) -> Result<NewPacket, ApiError> {
    let b: CreateBody = serde_json::from_slice(body)
        .map_err(|e| ApiError::invalid(format!("invalid JSON body: {e}")))?;
    let mode = b.mode.unwrap_or(Mode::Lucky);
    if !(1..=i64::from(cfg.max_count)).contains(&b.count) {
        return Err(ApiError::invalid(format!(
            "count must be 1..={}",
            cfg.max_count
        )));
    }
    if !(b.count..=cfg.max_total_cents).contains(&b.total_cents) {
        return Err(ApiError::invalid(format!(
            "total_cents must be count..={} (every share is at least 1 cent)",
            cfg.max_total_cents
        )));
    }
    if mode == Mode::Fixed && b.total_cents % b.count != 0 {
        return Err(ApiError::invalid(
            "a fixed packet needs total_cents divisible by count",
        ));
    }
    if mode == Mode::Fixed && b.split.is_some() {
        return Err(ApiError::invalid("split applies to lucky packets only"));
    }
    let expires = b.expires_in_secs.unwrap_or(DEFAULT_EXPIRES_IN_SECS as i64);
    if !(1..=MAX_EXPIRES_IN_SECS as i64).contains(&expires) {
        return Err(ApiError::invalid(format!(
            "expires_in_secs must be 1..={MAX_EXPIRES_IN_SECS}"
        )));
    }
    if let Some(g) = &b.greeting {
        if g.chars().count() > MAX_GREETING_CHARS {
            return Err(ApiError::invalid(format!(
                "greeting must be at most {MAX_GREETING_CHARS} characters"
            )));
        }
        if g.contains('\0') {
            return Err(ApiError::invalid("greeting must not contain NUL"));
        }
    }
    Ok(NewPacket {
        total_cents: b.total_cents,
        count: b.count as u32,
        mode,
        split: b.split.unwrap_or(LuckySplit::DoubleMean),
        expires_in_secs: expires as u64,
        greeting: b.greeting.filter(|g| !g.is_empty()),
    })
}

/// Whether `s` is a valid idempotency key or deposit reference: 1 to 64 visible ASCII
/// characters.
pub fn is_reference(s: &str) -> bool {
    (1..=64).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_graphic())
}

async fn create_packet_inner(store: &Store, req: Request) -> Result<Response<Body>, ApiError> {
    let route = http::route(&req)?;
    if route != Route::CreatePacket {
        return Err(wrong_function(&route));
    }
    let sender = caller(&req, store.config().auth_mode)?;
    let idempotency_key = match req.headers().get("idempotency-key") {
        None => None,
        Some(v) => match v.to_str() {
            Ok(k) if is_reference(k) => Some(k.to_string()),
            _ => {
                return Err(ApiError::invalid(
                    "Idempotency-Key must be 1 to 64 visible ASCII characters",
                ))
            }
        },
    };
    let new = validate_new_packet(store.config(), req.body().as_ref())?;
    match packets::create(store, &sender, &new, idempotency_key.as_deref()).await? {
        CreateOutcome::Created(p) | CreateOutcome::Repeat(p) => Ok(json_response(
            StatusCode::CREATED,
            &Value::Object(packet_json(&p)),
        )),
        CreateOutcome::InsufficientFunds { balance_cents } => Err(ApiError::new(
            StatusCode::PAYMENT_REQUIRED,
            "insufficient_funds",
            format!(
                "balance {balance_cents} cents is below total_cents {}",
                new.total_cents
            ),
        )
        .with("balance_cents", json!(balance_cents))),
        CreateOutcome::IdempotencyKeyReused => Err(ApiError::new(
            StatusCode::CONFLICT,
            "idempotency_key_reused",
            "this Idempotency-Key was used with a different request",
        )),
    }
}

/// The packet fields every packet answer carries.
pub fn packet_json(p: &Packet) -> serde_json::Map<String, Value> {
    let v = json!({
        "packet_id": p.packet_id,
        "sender_id": p.sender_id,
        "total_cents": p.total_cents,
        "count": p.count,
        "mode": p.mode.as_str(),
        "split": p.split.map(LuckySplit::as_str),
        "greeting": p.greeting,
        "created_at": rfc3339(p.created_at_ms),
        "expires_at": rfc3339(p.expires_at_ms),
    });
    match v {
        Value::Object(m) => m,
        _ => unreachable!(),
    }
}

/// A share as JSON: `{packet_id, share_id, amount_cents, grabbed_at, claim_by}`.
pub fn share_json(packet_id: &str, share: &Share, claim_by_ms: Option<i64>) -> Value {
    let mut v = json!({
        "packet_id": packet_id,
        "share_id": share.share_id,
        "amount_cents": share.amount_cents,
        "grabbed_at": rfc3339(share.grabbed_at_ms),
    });
    if let Some(ms) = claim_by_ms {
        v["claim_by"] = json!(rfc3339(ms));
    }
    v
}

/// Handler of the grab function: `GET /packets/{id}` and `POST /packets/{id}/grab`.
pub async fn grab(store: &Store, req: Request) -> Response<Body> {
    respond(grab_inner(store, req).await)
}

async fn grab_inner(store: &Store, req: Request) -> Result<Response<Body>, ApiError> {
    let route = http::route(&req)?;
    let user = caller(&req, store.config().auth_mode)?;
    match route {
        Route::ViewPacket(parsed) => {
            let id = path_id(&req, &parsed);
            let Some(v) = packets::view(store, &id).await? else {
                return Err(ApiError::not_found(format!("no packet {id}")));
            };
            let mut body = packet_json(&v.packet);
            body.insert("status".into(), json!(v.status.as_str()));
            body.insert("grabbed_count".into(), json!(v.packet.grabbed_count));
            body.insert("grabbed_cents".into(), json!(v.packet.grabbed_cents));
            body.insert("refunded_cents".into(), json!(v.packet.refunded_cents));
            let grabs: Vec<Value> = v
                .grabs
                .iter()
                .map(|g| {
                    json!({
                        "user_id": g.user_id,
                        "share_id": g.share.share_id,
                        "amount_cents": g.share.amount_cents,
                        "grabbed_at": rfc3339(g.share.grabbed_at_ms),
                        "claimed": g.claimed,
                    })
                })
                .collect();
            body.insert("grabs".into(), Value::Array(grabs));
            body.insert(
                "best_luck".into(),
                v.best_luck
                    .map(|(u, a)| json!({"user_id": u, "amount_cents": a}))
                    .unwrap_or(Value::Null),
            );
            Ok(json_response(StatusCode::OK, &Value::Object(body)))
        }
        Route::Grab(parsed) => {
            let id = path_id(&req, &parsed);
            match packets::grab(store, &id, &user).await? {
                GrabOutcome::Grabbed { share, claim_by_ms } => Ok(json_response(
                    StatusCode::OK,
                    &share_json(&id, &share, Some(claim_by_ms)),
                )),
                GrabOutcome::AlreadyGrabbed(share) => Err(ApiError::new(
                    StatusCode::CONFLICT,
                    "already_grabbed",
                    "you already grabbed a share of this packet",
                )
                .with("share", share_json(&id, &share, None))),
                GrabOutcome::NotFound => Err(ApiError::not_found(format!("no packet {id}"))),
                GrabOutcome::RateLimited { retry_after_ms } => Err(ApiError::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    "rate_limited",
                    "too many grab attempts; slow down",
                )
                .retry_after((retry_after_ms.max(1) as u64).div_ceil(1000))),
                GrabOutcome::Expired => Err(ApiError::new(
                    StatusCode::GONE,
                    "expired",
                    "this packet has expired",
                )),
                GrabOutcome::SoldOut => Err(ApiError::new(
                    StatusCode::GONE,
                    "sold_out",
                    "every share has been grabbed",
                )),
            }
        }
        other => Err(wrong_function(&other)),
    }
}

/// Handler of the claim function: `POST /packets/{id}/claim`.
pub async fn claim(store: &Store, req: Request) -> Response<Body> {
    respond(claim_inner(store, req).await)
}

async fn claim_inner(store: &Store, req: Request) -> Result<Response<Body>, ApiError> {
    let Route::Claim(parsed) = http::route(&req)? else {
        return Err(ApiError::not_found(
            "this function serves POST /packets/{id}/claim only",
        ));
    };
    let user = caller(&req, store.config().auth_mode)?;
    let id = path_id(&req, &parsed);
    match packets::claim(store, &id, &user).await? {
        ClaimOutcome::Claimed {
            share,
            balance_cents,
            claimed_at_ms,
            repeat,
        } => Ok(json_response(
            StatusCode::OK,
            &json!({
                "packet_id": id,
                "share_id": share.share_id,
                "amount_cents": share.amount_cents,
                "balance_cents": balance_cents,
                "claimed_at": rfc3339(claimed_at_ms),
                "repeat": repeat,
            }),
        )),
        ClaimOutcome::NotFound => Err(ApiError::not_found(format!("no packet {id}"))),
        ClaimOutcome::NoShare => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "no_share",
            "you grabbed no share of this packet",
        )),
        ClaimOutcome::Expired => Err(ApiError::new(
            StatusCode::GONE,
            "expired",
            "the claim window of this packet has closed",
        )),
    }
}

/// Handler of the wallet function: `GET /wallet` and `POST /wallet/deposits`.
pub async fn wallet(store: &Store, req: Request) -> Response<Body> {
    respond(wallet_inner(store, req).await)
}

/// The body of `POST /wallet/deposits`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DepositBody {
    user_id: String,
    amount_cents: i64,
    reference: String,
}

async fn wallet_inner(store: &Store, req: Request) -> Result<Response<Body>, ApiError> {
    match http::route(&req)? {
        Route::GetWallet => {
            let user = caller(&req, store.config().auth_mode)?;
            let w = wallet::get(store, &user).await?;
            let entries: Vec<Value> = w
                .entries
                .iter()
                .map(|e| {
                    json!({
                        "kind": e.kind.as_str(),
                        "amount_cents": e.amount_cents,
                        "reference": e.reference,
                        "at": rfc3339(e.at_ms),
                    })
                })
                .collect();
            Ok(json_response(
                StatusCode::OK,
                &json!({"user_id": user, "balance_cents": w.balance_cents, "entries": entries}),
            ))
        }
        Route::Deposit => {
            let principals = &store.config().deposit_principals;
            let allowed = http::iam_caller_arn(&req).is_some_and(|arn| principals.allows(&arn));
            if !allowed {
                return Err(ApiError::new(
                    StatusCode::FORBIDDEN,
                    "forbidden",
                    "deposits are accepted only from AWS_IAM-signed calls of the principals in \
                     HONGBAO_DEPOSIT_PRINCIPALS",
                ));
            }
            let b: DepositBody = json_body(&req)?;
            if !http::is_user_id(&b.user_id) {
                return Err(ApiError::invalid(
                    "user_id must be 1 to 64 characters of [A-Za-z0-9_-]",
                ));
            }
            if !(1..=MAX_DEPOSIT_CENTS).contains(&b.amount_cents) {
                return Err(ApiError::invalid(format!(
                    "amount_cents must be 1..={MAX_DEPOSIT_CENTS}"
                )));
            }
            if !is_reference(&b.reference) {
                return Err(ApiError::invalid(
                    "reference must be 1 to 64 visible ASCII characters",
                ));
            }
            let (balance, repeat) =
                match wallet::deposit(store, &b.user_id, b.amount_cents, &b.reference).await? {
                    DepositOutcome::Applied { balance_cents } => (balance_cents, false),
                    DepositOutcome::Repeat { balance_cents } => (balance_cents, true),
                    DepositOutcome::ReferenceReused => {
                        return Err(ApiError::new(
                            StatusCode::CONFLICT,
                            "idempotency_key_reused",
                            "this reference was deposited before with a different amount",
                        ))
                    }
                    DepositOutcome::BalanceLimit { balance_cents } => {
                        return Err(ApiError::new(
                            StatusCode::CONFLICT,
                            "balance_limit",
                            format!(
                                "the balance ({balance_cents} cents) plus this deposit would \
                                 exceed HONGBAO_MAX_BALANCE_CENTS ({} cents)",
                                store.config().max_balance_cents
                            ),
                        ))
                    }
                };
            Ok(json_response(
                StatusCode::CREATED,
                &json!({"user_id": b.user_id, "balance_cents": balance, "reference": b.reference, "repeat": repeat}),
            ))
        }
        other => Err(wrong_function(&other)),
    }
}

/// Handler of the reclaim-cron function (an EventBridge scheduled event): runs one
/// [`crate::reclaim::run_until`] that takes no new batch within
/// [`crate::reclaim::STOP_MARGIN`] of `deadline_ms` (the invocation's deadline, Unix ms, from
/// the Lambda context), and returns its summary as JSON `{"settled", "refunded_cents",
/// "redriven", "failed", "batches", "remaining_due", "skipped_locked"}`.
///
/// # Errors
/// [`crate::error::Error`] when the reclaim index is unavailable (the invocation fails; the
/// next scheduled run continues).
pub async fn reclaim_cron(
    store: &Store,
    deadline_ms: Option<u64>,
) -> Result<Value, crate::error::Error> {
    let deadline = deadline_ms.map(|ms| {
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_millis() as u64;
        std::time::Instant::now() + std::time::Duration::from_millis(ms.saturating_sub(now_ms))
    });
    let summary = crate::reclaim::run_until(store, deadline).await?;
    tracing::info!(
        settled = summary.settled,
        refunded_cents = summary.refunded_cents,
        redriven = summary.redriven,
        failed = summary.failed,
        batches = summary.batches,
        remaining_due = summary.remaining_due,
        skipped_locked = summary.skipped_locked,
        "reclaim run finished"
    );
    Ok(serde_json::to_value(summary).expect("summary serializes"))
}

/// Handler of the next-order-code function: `POST /order-codes` with an optional body
/// `{"count": N}` (`1..=100`, default 1; see [`order_code_count`]), any authenticated caller.
///
/// 201 `{"date": "2026-11-21", "codes": ["26112104817", ...]}` (the business day and `count`
/// codes, see [`crate::order_codes`]); 503 `exhausted` with `"date"` and `Retry-After` (seconds
/// until the next business day) when fewer than `count` codes are left today, none taken;
/// 400 `invalid_request` and 401 `unauthorized` before Redis is touched; 503 `unavailable`.
pub async fn next_order_code(store: &Store, req: Request) -> Response<Body> {
    respond(next_order_code_inner(store, req).await)
}

/// The body of `POST /order-codes`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct OrderCodesBody {
    #[serde(default = "one_code")]
    count: i64,
}

fn one_code() -> i64 {
    1
}

/// The number of codes a `POST /order-codes` body asks for: an empty body means 1, otherwise
/// a JSON object `{"count": N}` with an integer `N` in `1..=100` (`count` may be left out).
///
/// # Errors
/// 400 `invalid_request` for malformed JSON, a non-object, unknown fields, a non-integer or
/// out-of-range `count`.
pub fn order_code_count(body: &[u8]) -> Result<u32, ApiError> {
    use crate::order_codes::MAX_BATCH;
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(1);
    }
    let invalid = |e: serde_json::Error| ApiError::invalid(format!("invalid JSON body: {e}"));
    let v: Value = serde_json::from_slice(body).map_err(invalid)?;
    if !v.is_object() {
        return Err(ApiError::invalid(
            "the body must be a JSON object like {\"count\": 10}",
        ));
    }
    let b: OrderCodesBody = serde_json::from_value(v).map_err(invalid)?;
    match u32::try_from(b.count) {
        Ok(n) if (1..=MAX_BATCH).contains(&n) => Ok(n),
        _ => Err(ApiError::invalid(format!(
            "count must be an integer 1..={MAX_BATCH}"
        ))),
    }
}

async fn next_order_code_inner(store: &Store, req: Request) -> Result<Response<Body>, ApiError> {
    use crate::order_codes::{self, Outcome};
    let route = http::route(&req)?;
    if route != Route::OrderCodes {
        return Err(wrong_function(&route));
    }
    caller(&req, store.config().auth_mode)?;
    let count = order_code_count(req.body().as_ref())?;
    match order_codes::next_codes(store, count).await? {
        Outcome::Issued { date, codes } => Ok(json_response(
            StatusCode::CREATED,
            &json!({"date": date.to_string(), "codes": codes}),
        )),
        Outcome::Exhausted {
            date,
            retry_after_secs,
        } => Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "exhausted",
            format!(
                "fewer than {count} order codes are left for {date}; the next business day \
                 starts in {retry_after_secs} s"
            ),
        )
        .with("date", json!(date.to_string()))
        .retry_after(retry_after_secs)),
    }
}

/// Handler of the vote function, the article-voting site of "Redis in Action" chapter 1 (see
/// [`crate::voting`]; source: josiahcarlson/redis-in-action `python/ch01_listing_source.py`
/// and seed 002). Every route needs the caller's identity (401 without it).
///
/// | route | success | errors |
/// | --- | --- | --- |
/// | `POST /articles` `{"title", "link"}` | 201 [`article_json`] with `votes` 1 and `score` = posted + 432 | 400 |
/// | `POST /articles/{id}/vote` `{"direction": "up" \| "down"}` | 200 `{"article_id", "votes", "score", "direction", "changed"}` | 400, 404 `not_found`, 410 `voting_closed` (+`votes`, `score`), 429 `rate_limited` + `Retry-After` (s) |
/// | `GET /articles?order=score\|time&page=N` | 200 `{"order", "page", "articles": [...]}`, at most 25 | 400 |
/// | `PUT /articles/{id}/groups` `{"add": [...], "remove": [...]}` | 200 `{"article_id", "groups"}` (sorted) | 400, 403 `forbidden` (not the poster), 404 |
/// | `GET /groups/{group}/articles?order=score\|time&page=N` | 200 `{"group", "order", "page", "articles"}` (cached up to 60 s) | 400 |
pub async fn vote(store: &Store, req: Request) -> Response<Body> {
    respond(vote_inner(store, req).await)
}

/// An article as JSON: `{"article_id" (decimal text), "title", "link", "poster", "posted_at"
/// (RFC 3339), "votes", "score"}` (`score` = posted_at in Unix seconds + 432 × votes).
pub fn article_json(a: &crate::voting::Article) -> Value {
    json!({
        "article_id": a.id.to_string(),
        "title": a.title,
        "link": a.link,
        "poster": a.poster,
        "posted_at": rfc3339(a.posted_at * 1000),
        "votes": a.votes,
        "score": a.score(),
    })
}

async fn vote_inner(store: &Store, req: Request) -> Result<Response<Body>, ApiError> {
    use crate::voting::{self, GroupsOutcome, VoteOutcome};
    use lambda_http::RequestExt;

    let route = http::route(&req)?;
    let user = caller(&req, store.config().auth_mode)?;
    let page_json = |order: voting::Order, page: u32, list: &[voting::Article]| {
        json!({
            "order": order.as_str(),
            "page": page,
            "articles": list.iter().map(article_json).collect::<Vec<_>>(),
        })
    };
    match route {
        Route::PostArticle => {
            let new = voting::parse_new_article(req.body().as_ref())?;
            let article = voting::post(store, &user, &new).await?;
            Ok(json_response(StatusCode::CREATED, &article_json(&article)))
        }
        Route::ListArticles => {
            let (order, page) = voting::parse_page_query(req.query_string_parameters_ref())?;
            let list = voting::articles(store, order, page).await?;
            Ok(json_response(
                StatusCode::OK,
                &page_json(order, page, &list),
            ))
        }
        Route::VoteArticle(parsed) => {
            let id = path_id(&req, &parsed);
            let direction = voting::parse_vote(req.body().as_ref())?;
            match voting::vote(store, &id, &user, direction).await? {
                VoteOutcome::Voted {
                    votes,
                    score,
                    changed,
                } => Ok(json_response(
                    StatusCode::OK,
                    &json!({
                        "article_id": id,
                        "votes": votes,
                        "score": score,
                        "direction": direction.as_str(),
                        "changed": changed,
                    }),
                )),
                VoteOutcome::NotFound => Err(ApiError::not_found(format!("no article {id}"))),
                VoteOutcome::Closed { votes, score } => Err(ApiError::new(
                    StatusCode::GONE,
                    "voting_closed",
                    "voting on this article closed one week after it was posted",
                )
                .with("votes", json!(votes))
                .with("score", json!(score))),
                VoteOutcome::RateLimited { retry_after_ms } => Err(ApiError::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    "rate_limited",
                    "too many votes; slow down",
                )
                .retry_after((retry_after_ms.max(1) as u64).div_ceil(1000))),
            }
        }
        Route::SetArticleGroups(parsed) => {
            let id = path_id(&req, &parsed);
            let change = voting::parse_group_change(req.body().as_ref())?;
            match voting::set_groups(store, &id, &user, &change).await? {
                GroupsOutcome::Updated(groups) => Ok(json_response(
                    StatusCode::OK,
                    &json!({"article_id": id, "groups": groups}),
                )),
                GroupsOutcome::NotFound => Err(ApiError::not_found(format!("no article {id}"))),
                GroupsOutcome::Forbidden => Err(ApiError::new(
                    StatusCode::FORBIDDEN,
                    "forbidden",
                    "only the poster of an article may change its groups",
                )),
            }
        }
        Route::GroupArticles(parsed) => {
            let group = req
                .path_parameters_ref()
                .and_then(|p| p.first("group"))
                .map_or(parsed, str::to_string);
            if !voting::is_group_name(&group) {
                return Err(ApiError::invalid(format!(
                    "a group name is 1 to {} characters of [a-z0-9-]",
                    voting::MAX_GROUP_NAME_CHARS
                )));
            }
            let (order, page) = voting::parse_page_query(req.query_string_parameters_ref())?;
            let list = voting::group_articles(store, &group, order, page).await?;
            let mut body = page_json(order, page, &list);
            body["group"] = json!(group);
            Ok(json_response(StatusCode::OK, &body))
        }
        other => Err(wrong_function(&other)),
    }
}
