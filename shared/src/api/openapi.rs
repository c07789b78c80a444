//! The OpenAPI 3.1 document of the HTTP API, generated from the handlers' `#[utoipa::path]`
//! annotations and the bodies' `ToSchema` derives (`utoipa`), so the spec cannot drift from
//! the code: `openapi.json` at the repository's top level is [`json`]'s output, and a test
//! fails when the committed file differs (`make openapi` rewrites it).
//!
//! API Gateway HTTP APIs import only OpenAPI 3.0, so `template.yaml` keeps its own route
//! definitions; this document is for clients (code generation), reviewers and fuzzing
//! (`make test` runs schemathesis against `make serve` with it).
//!
//! The answers every operation shares (401 `unauthorized`, 500 `internal`, 503 `unavailable`)
//! are added here once (`CommonAnswers`), not in each handler's annotation.

use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::response::ResponseBuilder;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{Content, Ref, RefOr, Response};
use utoipa::{Modify, OpenApi, PartialSchema};

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

/// The API's document.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "hongbao",
        description = "Red packets, coupon drops, daily order codes and article voting on Redis / Valkey (AWS Lambda + API Gateway HTTP API). Money is integer cents; times are RFC 3339 UTC. Every error is `{\"error\", \"message\"}` plus, for some codes, typed extra fields (each operation lists its codes); 503 `unavailable` + `Retry-After` means Redis trouble (the body's `message` says what a retry does where that is not obvious). On every path: an unknown path is 404 `NotFoundError`, another method 405 `MethodNotAllowedError` (+ `Allow`).",
        license(name = "MIT", identifier = "MIT")
    ),
    paths(
        super::packets::create::create,
        super::packets::cancel::cancel,
        super::packets::view::view,
        super::packets::grab::grab,
        super::packets::claim::claim,
        super::history::list::list,
        super::history::summary::summary,
        super::wallet::get::get_wallet,
        super::wallet::deposit::deposit,
        super::wallet::withdraw::withdraw,
        super::support::coupon::support_coupon,
        super::support::packet::support_packet,
        super::support::wallet::support_wallet,
        super::order_codes::next::next_codes,
        super::voting::post::post_article,
        super::voting::list::list,
        super::voting::vote::vote,
        super::voting::groups::set_groups,
        super::voting::group_articles::group_articles,
        super::coupons::create::create,
        super::coupons::add_codes::add_codes,
        super::coupons::campaign::campaign,
        super::coupons::grab::grab,
        super::coupons::list::list,
        super::coupons::hold::hold,
        super::coupons::redeem::redeem,
        super::coupons::release::release,
    ),
    // What no annotation refers to: the answers every operation shares ([`CommonAnswers`]),
    // the answers to unknown paths and methods, and the query parameters' enums (utoipa
    // collects only the bodies' schemas).
    components(schemas(
        super::schemas::UnauthorizedError,
        super::schemas::InternalError,
        super::schemas::UnavailableError,
        super::schemas::PayloadTooLargeError,
        super::schemas::UnsupportedMediaTypeError,
        super::schemas::NotFoundError,
        super::schemas::MethodNotAllowedError,
        super::schemas::RoleDoc,
        super::schemas::OrderDoc,
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
    modifiers(&Security, &OptionalBodies, &CommonAnswers),
    security(("jwt" = [])),
    tags(
        (name = "red packets", description = "Create, grab, claim and view red packets"),
        (name = "wallet", description = "Balances, ledgers and deposits"),
        (name = "order codes", description = "Daily unique order codes"),
        (name = "voting", description = "Redis in Action chapter 1, atomic"),
        (name = "coupons", description = "Coupon drops: campaigns of codes grabbed first-come-first-served and redeemed once"),
        (name = "support", description = "Read-only look-ups for operators answering a ticket (AWS_IAM, `HONGBAO_SUPPORT_PRINCIPALS`)")
    )
)]
pub struct ApiDoc;

/// The document as pretty-printed JSON with a trailing newline (the content of `openapi.json`).
pub fn json() -> String {
    let mut text = ApiDoc::openapi()
        .to_pretty_json()
        .expect("the OpenAPI document serializes");
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    fn document() -> Value {
        serde_json::from_str(&super::json()).unwrap()
    }

    /// Every operation of the document, as `(method, path, operation)`.
    fn operations(doc: &Value) -> Vec<(String, String, Value)> {
        let mut ops = Vec::new();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                ops.push((method.clone(), path.clone(), op.clone()));
            }
        }
        ops
    }

    /// Operation ids are unique (`list` was both `GET /articles` and `GET /packets`),
    /// summaries one line with the detail in `description`, no Rust intra-doc link in any text,
    /// every error answer typed by its codes (no catch-all error schema), 413 and 415 on every
    /// operation with a body, `Retry-After` on every 429 and 503, no nullable header.
    #[test]
    fn operations_are_specific() {
        let doc = document();
        let text = doc.to_string();
        assert!(
            !text.contains("[`"),
            "a Rust intra-doc link in the document"
        );
        assert!(!text.contains("ErrorDoc"));
        let ops = operations(&doc);
        for (i, _) in text.match_indices("\"$ref\":\"#/components/schemas/") {
            let rest = &text[i + "\"$ref\":\"#/components/schemas/".len()..];
            let name = &rest[..rest.find('"').unwrap()];
            assert!(
                doc["components"]["schemas"].get(name).is_some(),
                "unresolved {name}"
            );
        }
        let mut ids = std::collections::HashSet::new();
        for (method, path, op) in &ops {
            let at = format!("{method} {path}");
            let id = op["operationId"].as_str().unwrap();
            assert!(ids.insert(id.to_string()), "{at}: operationId {id} twice");
            let summary = op["summary"].as_str().unwrap();
            assert!(
                !summary.contains('\n') && summary.len() < 60,
                "{at}: {summary}"
            );
            assert!(
                op["description"].as_str().is_some_and(|d| !d.is_empty()),
                "{at}"
            );
            let responses = op["responses"].as_object().unwrap();
            if op.get("requestBody").is_some() {
                assert!(responses.contains_key("413"), "{at}: no 413");
                assert!(responses.contains_key("415"), "{at}: no 415");
            }
            for (status, r) in responses {
                if status.starts_with('4') || status.starts_with('5') {
                    let schema = &r["content"]["application/json"]["schema"]["$ref"];
                    let name = schema
                        .as_str()
                        .unwrap_or_else(|| panic!("{at} {status}: untyped"));
                    let name = name.trim_start_matches("#/components/schemas/");
                    let schema = &doc["components"]["schemas"][name];
                    let alternatives = match schema["oneOf"].as_array() {
                        Some(refs) => refs
                            .iter()
                            .map(|r| {
                                let n = r["$ref"].as_str().unwrap();
                                doc["components"]["schemas"]
                                    [n.trim_start_matches("#/components/schemas/")]
                                .clone()
                            })
                            .collect(),
                        None => vec![schema.clone()],
                    };
                    for s in alternatives {
                        let codes = &s["properties"]["error"];
                        assert_eq!(codes["type"], "string", "{at} {status}: {s}");
                        assert!(codes["enum"].is_array(), "{at} {status}: {s}");
                    }
                }
                if status == "429" || status == "503" {
                    let h = &r["headers"]["Retry-After"]["schema"]["type"];
                    assert_eq!(h, "integer", "{at} {status}");
                }
            }
            for p in op["parameters"].as_array().into_iter().flatten() {
                assert!(
                    p["schema"]["type"].as_str().is_some() || p["schema"]["$ref"].is_string(),
                    "{at}: parameter {} nullable",
                    p["name"]
                );
            }
        }
    }

    /// A body that may be absent is optional, never `null`: `POST /order-codes` answers a
    /// JSON `null` with 400.
    #[test]
    fn optional_bodies_are_not_nullable() {
        let doc = document();
        let body = &doc["paths"]["/order-codes"]["post"]["requestBody"];
        assert_eq!(body["required"], Value::Bool(false), "{body}");
        assert_eq!(
            body["content"]["application/json"]["schema"]["$ref"],
            "#/components/schemas/CountBody"
        );
    }
    /// No two documented types share a name: utoipa keeps one schema per name, so a second
    /// `CodesBody` (the coupon batch's answer) silently replaced the order codes' answer in
    /// the document, and the generated clients parsed `POST /order-codes` as a batch.
    #[test]
    fn schema_names_are_unique() {
        fn rust_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    rust_files(&path, out);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    out.push(path);
                }
            }
        }
        let mut files = Vec::new();
        rust_files(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/api"),
            &mut files,
        );
        let mut seen = std::collections::BTreeMap::new();
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            let lines: Vec<&str> = text.lines().collect();
            for (i, line) in lines.iter().enumerate() {
                let documented =
                    line.contains("ToSchema") && line.trim_start().starts_with("#[derive");
                if !documented {
                    continue;
                }
                // The item the derive is on: the first line that declares a struct or enum.
                let Some(decl) = lines[i + 1..].iter().find(|l| {
                    let words: Vec<&str> = l.split_whitespace().collect();
                    !l.trim_start().starts_with("//")
                        && words.iter().take(2).any(|w| *w == "struct" || *w == "enum")
                }) else {
                    continue;
                };
                let name = decl
                    .split_whitespace()
                    .skip_while(|w| *w != "struct" && *w != "enum")
                    .nth(1)
                    .unwrap()
                    .trim_end_matches(['{', '(', ';'])
                    .to_string();
                if let Some(other) = seen.insert(name.clone(), file.clone()) {
                    panic!("{name} is documented twice: {other:?} and {file:?}");
                }
            }
        }
    }

    /// `openapi.json` is the generated document (run `make openapi` after changing the API).
    #[test]
    fn committed_openapi_json_is_current() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../openapi.json");
        let committed = std::fs::read_to_string(path).unwrap_or_default();
        let generated = super::json();
        if committed != generated {
            if std::env::var_os("HONGBAO_WRITE_OPENAPI").is_some() {
                std::fs::write(path, &generated).expect("write openapi.json");
                return;
            }
            panic!(
                "openapi.json differs from the document the code generates; run `make openapi` \
                 (HONGBAO_WRITE_OPENAPI=1 cargo test -p hongbao --lib openapi) and commit it"
            );
        }
    }
}
