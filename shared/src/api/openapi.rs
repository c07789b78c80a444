//! The OpenAPI 3.1 document of the HTTP API, generated from the handlers' `#[utoipa::path]`
//! annotations and the bodies' `ToSchema` derives (`utoipa`), so the spec cannot drift from
//! the code: `openapi.json` at the repository's top level is [`json`]'s output, and a test
//! fails when the committed file differs (`make openapi` rewrites it).
//!
//! API Gateway HTTP APIs import only OpenAPI 3.0, so `template.yaml` keeps its own route
//! definitions; this document is for clients (code generation), reviewers and fuzzing
//! (`make test` runs schemathesis against `make serve` with it).

use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

/// The security schemes: `jwt` (the HTTP API's JWT authorizer; the caller is the claim `sub`)
/// and `sigv4` (`AWS_IAM`, deposits only).
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

/// The API's document.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "hongbao",
        description = "Red packets, daily order codes and article voting on Redis / Valkey (AWS Lambda + API Gateway HTTP API). Money is integer cents. Every error is `{\"error\", \"message\"}`; 503 `unavailable` + `Retry-After` means Redis trouble (retries are safe).",
        license(name = "MIT")
    ),
    paths(
        super::packets::create,
        super::packets::view,
        super::packets::grab,
        super::packets::claim,
        super::history::list,
        super::history::summary,
        super::wallet::get_wallet,
        super::wallet::deposit,
        super::order_codes::next_codes,
        super::voting::post_article,
        super::voting::list,
        super::voting::vote,
        super::voting::set_groups,
        super::voting::group_articles,
    ),
    modifiers(&Security),
    security(("jwt" = [])),
    tags(
        (name = "red packets", description = "Create, grab, claim and view red packets"),
        (name = "wallet", description = "Balances, ledgers and deposits"),
        (name = "order codes", description = "Daily unique order codes"),
        (name = "voting", description = "Redis in Action chapter 1, atomic")
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
