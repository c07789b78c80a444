//! The OpenAPI 3.1 document of the HTTP API, generated from the handlers' `#[utoipa::path]`
//! annotations and the bodies' `ToSchema` derives (`utoipa`), so the spec cannot drift from
//! the code: `openapi.json` at the repository's top level is [`json`]'s output for every
//! function's routes (`crate::lambda::openapi`), and a test fails when the committed file
//! differs (`make openapi` rewrites it).
//!
//! API Gateway HTTP APIs import only OpenAPI 3.0, so the template's routes come from the same
//! declarations through `functions.json`, not from this document; it is for clients (code
//! generation), reviewers and fuzzing (`make test` runs schemathesis against `make serve` with
//! it).
//!
//! The answers every operation shares (401 `unauthorized`, 500 `internal`, 503 `unavailable`)
//! are added here once (`CommonAnswers`), not in each handler's annotation.

use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::response::ResponseBuilder;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{Content, Ref, RefOr, Response};
use utoipa::{Modify, OpenApi, PartialSchema};

use super::operation::{Method, Routes};

/// The security schemes: `jwt` (the HTTP API's JWT authorizer; the caller is the claim `sub`)
/// and `sigv4` (`AWS_IAM`, deposits and withdrawals only).
struct Security;

impl Modify for Security {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "jwt",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .build(),
            ),
        );
        components.add_security_scheme(
            "sigv4",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::new("Authorization"))),
        );
    }
}

/// Marks the bodies of `POST /order-codes` and `POST /packets/{id}/grab` optional: the request
/// may have no body (one code; a packet without a password) or its object. utoipa would say so
/// only with an `Option` content type, which also makes the body nullable, and a JSON `null`
/// body is answered 400.
struct OptionalBodies;

impl Modify for OptionalBodies {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        for path in ["/order-codes", "/packets/{id}/grab"] {
            let body = openapi
                .paths
                .paths
                .get_mut(path)
                .and_then(|item| item.post.as_mut())
                .and_then(|op| op.request_body.as_mut());
            if let Some(utoipa::openapi::RefOr::T(body)) = body {
                body.required = Some(utoipa::openapi::Required::False);
            }
        }
    }
}

/// The answers of every operation that the handlers' annotations leave out, because they are
/// the same everywhere:
///
/// * 401 [`UnauthorizedError`](super::schemas::UnauthorizedError) on every operation under the
///   document's `jwt` security (no `security` of its own); `POST /wallet/deposits` and
///   `POST /wallet/withdrawals`, signed with SigV4 (`sigv4`), never answer 401 (a request
///   without a valid IAM caller is 403);
/// * 400 [`InvalidRequestError`](super::schemas::InvalidRequestError) on every operation with
///   a path parameter (one that is not percent-encoded UTF-8 is refused) or a request body;
/// * 413 [`PayloadTooLargeError`](super::schemas::PayloadTooLargeError) and 415
///   [`UnsupportedMediaTypeError`](super::schemas::UnsupportedMediaTypeError) on every
///   operation with a request body (what the JSON body extractors refuse);
/// * 500 [`InternalError`](super::schemas::InternalError) on every operation;
/// * 503 [`UnavailableError`](super::schemas::UnavailableError) + `Retry-After` on every
///   operation that declares no 503 of its own (`POST /order-codes` declares one that is also
///   `exhausted`).
///
/// An operation that declares one of these statuses itself keeps its own answer.
struct CommonAnswers;

impl CommonAnswers {
    /// An answer described by `description` whose JSON body is the schema named `schema`.
    fn answer(description: &str, schema: &str) -> ResponseBuilder {
        ResponseBuilder::new().description(description).content(
            "application/json",
            Content::new(Some(Ref::from_schema_name(schema))),
        )
    }

    /// 401 `unauthorized`.
    fn unauthorized() -> Response {
        Self::answer(
            "`unauthorized`: no valid caller identity",
            "UnauthorizedError",
        )
        .build()
    }

    /// 400 `invalid_request`.
    fn invalid() -> Response {
        Self::answer(
            "`invalid_request`: a path parameter that is not percent-encoded UTF-8, or a body that breaks the contract; nothing written",
            "InvalidRequestError",
        )
        .build()
    }

    /// 413 `payload_too_large`.
    fn payload_too_large() -> Response {
        Self::answer(
            "`payload_too_large`: the body is over 2 MiB; nothing written",
            "PayloadTooLargeError",
        )
        .build()
    }

    /// 415 `unsupported_media_type`.
    fn unsupported_media_type() -> Response {
        Self::answer(
            "`unsupported_media_type`: the body is not declared `application/json`; nothing written",
            "UnsupportedMediaTypeError",
        )
        .build()
    }

    /// 500 `internal`.
    fn internal() -> Response {
        Self::answer("`internal`: a bug (not retryable)", "InternalError").build()
    }

    /// 503 `unavailable` with its `Retry-After` header (integer seconds).
    fn unavailable() -> Response {
        Self::answer(
            "`unavailable`: Redis trouble; retry after `Retry-After` seconds (the body's `message` says what a retry does where that is not obvious)",
            "UnavailableError",
        )
        .header(
            "Retry-After",
            HeaderBuilder::new()
                .schema(Some(u32::schema()))
                .description(Some("seconds to wait before retrying"))
                .build(),
        )
        .build()
    }
}

impl Modify for CommonAnswers {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        for (path, item) in openapi.paths.paths.iter_mut() {
            let has_parameter = path.contains('{');
            let operations = [
                &mut item.get,
                &mut item.put,
                &mut item.post,
                &mut item.delete,
                &mut item.patch,
            ];
            for op in operations.into_iter().flatten() {
                let under_jwt = op.security.is_none();
                let has_body = op.request_body.is_some();
                let answers = &mut op.responses.responses;
                if has_parameter || has_body {
                    answers
                        .entry("400".into())
                        .or_insert_with(|| RefOr::T(Self::invalid()));
                }
                if has_body {
                    answers
                        .entry("413".into())
                        .or_insert_with(|| RefOr::T(Self::payload_too_large()));
                    answers
                        .entry("415".into())
                        .or_insert_with(|| RefOr::T(Self::unsupported_media_type()));
                }
                if under_jwt {
                    answers
                        .entry("401".into())
                        .or_insert_with(|| RefOr::T(Self::unauthorized()));
                }
                answers
                    .entry("500".into())
                    .or_insert_with(|| RefOr::T(Self::internal()));
                answers
                    .entry("503".into())
                    .or_insert_with(|| RefOr::T(Self::unavailable()));
            }
        }
    }
}

/// The document's frame: info, servers, tags, security schemes and the shared schemas; the
/// paths come from the routes ([`document`]).
#[derive(OpenApi)]
#[openapi(
    info(
        title = "hongbao",
        description = "Red packets, coupon drops, daily order codes and article voting on Redis / Valkey (AWS Lambda + API Gateway HTTP API). Money is integer cents; times are RFC 3339 UTC. Every error is `{\"error\", \"message\"}` plus, for some codes, typed extra fields (each operation lists its codes); 503 `unavailable` + `Retry-After` means Redis trouble (the body's `message` says what a retry does where that is not obvious). On every path: an unknown path is 404 `NotFoundError`, another method 405 `MethodNotAllowedError` (+ `Allow`).",
        license(name = "MIT", identifier = "MIT")
    ),
    // What no annotation refers to: the answers every operation shares ([`CommonAnswers`]),
    // the answers to unknown paths and methods, the refusals several operations share (their
    // declarations must name the same codes and fields: `document`), and the query
    // parameters' enums (utoipa collects only the bodies' schemas).
    components(schemas(
        super::schemas::UnauthorizedError,
        super::schemas::InternalError,
        super::schemas::UnavailableError,
        super::schemas::PayloadTooLargeError,
        super::schemas::UnsupportedMediaTypeError,
        super::schemas::NotFoundError,
        super::schemas::MethodNotAllowedError,
        super::schemas::ForbiddenError,
        super::schemas::RateLimitedError,
        super::schemas::IdempotencyKeyReusedError,
        super::schemas::InsufficientFundsError,
        super::schemas::InvalidRequestError,
        crate::history::rules::Role,
        crate::voting::rules::Order,
    )),
    servers(
        (url = "http://127.0.0.1:3000", description = "`make serve` (identity from the `x-user-id` header)"),
        (
            url = "https://{apiId}.execute-api.{region}.amazonaws.com",
            description = "the deployed HTTP API (`$default` stage)",
            variables(
                ("apiId" = (default = "abcdef1234", description = "the HTTP API's id (stack output)")),
                ("region" = (default = "us-east-1", description = "the stack's AWS region"))
            )
        )
    ),
    modifiers(&Security),
    security(("jwt" = [])),
    tags(
        (name = "red packets", description = "Create, grab, claim and view red packets"),
        (name = "wallet", description = "Balances, ledgers and deposits"),
        (name = "order codes", description = "Daily unique order codes"),
        (name = "voting", description = "Redis in Action chapter 1, atomic"),
        (name = "coupons", description = "Coupon drops: campaigns of codes grabbed first-come-first-served and redeemed once"),
        (name = "merchants", description = "Merchant budgets: deposits, withdrawals and the books (AWS_IAM, `HONGBAO_MERCHANT_PRINCIPALS`)"),
        (name = "support", description = "Read-only look-ups for operators answering a ticket (AWS_IAM, `HONGBAO_SUPPORT_PRINCIPALS`)")
    )
)]
pub struct ApiDoc;

/// The document of `routes` (every function's, [`crate::lambda::Function::routes`]): the
/// document's frame ([`ApiDoc`]: info, servers, tags, the shared schemas), the paths of the
/// handlers' annotations (collected by [`Routes::route`]), each operation's declared refusals
/// ([`super::Operation::refusals`]: its error answers, their schemas), then the answers every
/// operation shares (`CommonAnswers`).
///
/// # Panics
/// When two declarations give one schema name different bodies (utoipa would keep one of them
/// silently), or an annotation and a declaration both document one answer.
pub fn document(routes: Routes) -> utoipa::openapi::OpenApi {
    let (operations, annotated) = routes.into_document();
    let mut doc = ApiDoc::openapi();
    doc.merge(annotated);
    OptionalBodies.modify(&mut doc);
    let mut schemas = Vec::new();
    for op in &operations {
        let item = doc
            .paths
            .paths
            .get_mut(op.path)
            .unwrap_or_else(|| panic!("{} is not documented", op.route_key()));
        let documented = match op.method {
            Method::Get => item.get.as_mut(),
            Method::Post => item.post.as_mut(),
            Method::Put => item.put.as_mut(),
        };
        let documented =
            documented.unwrap_or_else(|| panic!("{} is not documented", op.route_key()));
        if let Some(principals) = op.principals() {
            // Every AWS_IAM route admits only its setting's principals (the handlers' shared
            // check), so its 403 follows from the declaration.
            documented.responses.responses.insert(
                "403".into(),
                crate::api::refusal::response(
                    format!(
                        "`forbidden`: not a SigV4-signed call of a principal in `{}`",
                        principals.name
                    ),
                    "ForbiddenError",
                    None,
                ),
            );
        }
        for (status, answer) in (op.refusals.responses)() {
            let previous = documented
                .responses
                .responses
                .insert(status.clone(), answer);
            assert!(
                previous.is_none(),
                "{}: {status} is both annotated and declared",
                op.route_key()
            );
        }
        (op.refusals.schemas)(&mut schemas);
        if let Some(replay) = op.replay {
            mark_replays(documented, &replay);
        }
    }
    let components = doc.components.get_or_insert_with(Default::default);
    for (name, schema) in schemas {
        match components.schemas.get(&name) {
            Some(existing) => assert!(
                same_body(existing, &schema),
                "two bodies are named {name}: {} and {}",
                serde_json::to_string(existing).unwrap_or_default(),
                serde_json::to_string(&schema).unwrap_or_default()
            ),
            None => {
                components.schemas.insert(name, schema);
            }
        }
    }
    CommonAnswers.modify(&mut doc);
    doc
}

/// Declares `Idempotent-Replayed` on each success answer of an operation with a [`Replay`]:
/// present (`true`) on a replay only (docs/idempotency.md).
///
/// [`Replay`]: super::replay::Replay
fn mark_replays(documented: &mut utoipa::openapi::path::Operation, replay: &super::replay::Replay) {
    use utoipa::openapi::header::HeaderBuilder;
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    let description = format!(
        "`true` when this answer is a replay: a call sent again ({}) answered with the first \
         call's status and body; absent otherwise (docs/idempotency.md)",
        replay.key
    );
    for (status, answer) in documented.responses.responses.iter_mut() {
        if let (true, RefOr::T(answer)) = (status.starts_with('2'), answer) {
            let header = HeaderBuilder::new()
                .schema(Some(
                    ObjectBuilder::new()
                        .schema_type(Type::String)
                        .enum_values(Some(["true"])),
                ))
                .description(Some(description.clone()))
                .build();
            answer
                .headers
                .insert("Idempotent-Replayed".to_string(), RefOr::T(header));
        }
    }
}

/// Whether two schemas of one name describe the same body: the same codes (`error`'s enum) and
/// the same required fields, the rest (descriptions) aside; two refusals may share a schema
/// that way (`NotFoundError`), and the first one documented stays.
fn same_body(a: &RefOr<utoipa::openapi::Schema>, b: &RefOr<utoipa::openapi::Schema>) -> bool {
    let (a, b) = (
        serde_json::to_value(a).unwrap_or_default(),
        serde_json::to_value(b).unwrap_or_default(),
    );
    let required = |v: &serde_json::Value| {
        let mut names: Vec<String> = v["required"]
            .as_array()
            .map(|r| {
                r.iter()
                    .filter_map(|n| n.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    };
    a["properties"]["error"]["enum"] == b["properties"]["error"]["enum"]
        && required(&a) == required(&b)
}

/// [`document`] as pretty-printed JSON with a trailing newline.
pub fn json(routes: Routes) -> String {
    let mut text = document(routes)
        .to_pretty_json()
        .expect("the OpenAPI document serializes");
    text.push('\n');
    text
}
