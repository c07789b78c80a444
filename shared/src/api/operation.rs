//! [`Operation`]: one HTTP operation declared once, beside its handler (its route, who may call
//! it, and the name of the template event that routes it), and [`Routes`]: a function's router
//! built from those declarations, which also lists them.
//!
//! A function's router, its OpenAPI paths and its list of operations come from the same calls
//! ([`Routes::route`]), so none can miss one the others have. What is derived from the lists:
//! `functions.json` (through [`crate::lambda::Function`]), which `make lint` holds
//! `template.yaml`'s HttpApi events to (`tests/template_checks/declared.py`), and which the
//! Python tools read; the OpenAPI document ([`super::openapi::document`]), whose `sigv4` security a
//! test checks against the declared auth.

use axum::Router;
use serde::Serialize;
use utoipa_axum::router::{OpenApiRouter, UtoipaMethodRouter};

use super::state::ApiState;
use crate::domain::settings::Setting;
use crate::wallet::rules::IamPrincipals;

/// Checks that `arn`, one of `setting`'s principals, acts for `merchant_id` (`None`: something
/// no merchant owns) — see [`Tenant`].
///
/// # Errors
/// 403 `forbidden` naming the merchant and the setting.
pub(crate) fn act_for(
    principals: &IamPrincipals,
    setting: &Setting,
    arn: Option<&str>,
    merchant_id: Option<&str>,
) -> Result<(), super::error::ApiError> {
    if arn.is_some_and(|arn| principals.acts_for(arn, merchant_id)) {
        return Ok(());
    }
    let whose = match merchant_id {
        Some(m) => format!("merchant {m:?}"),
        None => "no merchant (name one of yours)".to_string(),
    };
    Err(super::error::ApiError::forbidden(format!(
        "this principal acts only for the merchants {} binds it to \
         (`<principal>=<merchant>|…`), not for {whose}",
        setting.name
    )))
}

/// An HTTP method an operation answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Method {
    /// `GET`.
    Get,
    /// `POST`.
    Post,
    /// `PUT`.
    Put,
}

impl Method {
    /// The method as HTTP spells it (`GET`, `POST`, `PUT`).
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Put => "PUT",
        }
    }
}

/// Who may call an operation: how API Gateway authorizes the call before the function runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Auth {
    /// The HTTP API's JWT authorizer; the caller is the token's `sub`.
    Jwt,
    /// AWS_IAM (SigV4-signed calls of the team's backend); the handler then admits only the
    /// principals listed in this setting (e.g. `HONGBAO_DEPOSIT_PRINCIPALS`).
    Iam {
        /// The setting listing the admitted principals.
        principals: &'static Setting,
        /// Whose data the operation touches, and so which principals bound to merchants may
        /// call it.
        tenant: Tenant,
    },
}

/// Whose data an AWS_IAM operation touches. A principal bound to some merchants
/// (`<principal>=<merchant>|…` in `HONGBAO_MERCHANT_PRINCIPALS` or
/// `HONGBAO_COUPON_PRINCIPALS`) is refused 403, nothing written, on a merchant's operation for
/// another merchant ([`crate::wallet::rules::IamPrincipals::acts_for`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tenant {
    /// Users' wallets and the support look-ups: the setting's principals act for every user
    /// (their settings take no merchant binding).
    Users,
    /// One merchant's, found in the request as this says (e.g. "the path's `merchant_id`",
    /// "the campaign's merchant").
    Merchant(&'static str),
}

/// One HTTP operation: `METHOD path`, its authorization, and the name of its event in the
/// function's template resource (`Events.<event>`, an HttpApi event: a logical id, so a
/// deployed stack keeps its route when the name stays).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Operation {
    /// The template event's name (`GrabPacket`).
    pub event: &'static str,
    /// The method.
    pub method: Method,
    /// The path as axum, OpenAPI and API Gateway write it (`/packets/{id}/grab`).
    pub path: &'static str,
    /// Who may call it.
    pub auth: Auth,
    /// What it refuses beside the answers every operation shares: the error answers and
    /// schemas of its refusal enum (`XRefusal::REFUSALS`, declared by `refusals!`).
    pub refusals: super::refusal::Refusals,
    /// How it answers a call sent again (`None`: it changes nothing, or each call is its own).
    pub replay: Option<super::replay::Replay>,
}

impl Operation {
    /// The setting naming an AWS_IAM operation's principals (`None` for a JWT one).
    pub const fn principals(&self) -> Option<&'static Setting> {
        match self.auth {
            Auth::Jwt => None,
            Auth::Iam { principals, .. } => Some(principals),
        }
    }

    /// Whose data an AWS_IAM operation touches (`None` for a JWT one).
    pub const fn tenant(&self) -> Option<Tenant> {
        match self.auth {
            Auth::Jwt => None,
            Auth::Iam { tenant, .. } => Some(tenant),
        }
    }

    /// `METHOD /path`, API Gateway's route key.
    pub fn route_key(&self) -> String {
        format!("{} {}", self.method.as_str(), self.path)
    }
}

impl Serialize for Operation {
    /// `{"event", "method", "path", "auth": "jwt" | "iam", "principals": setting | null,
    /// "tenant": "users" | "merchant" | null}` (`tenant`: [`Tenant`]; a setting of a
    /// `merchant` operation may bind its principals to merchants).
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let (auth, principals, tenant) = match self.auth {
            Auth::Jwt => ("jwt", None, None),
            Auth::Iam { principals, tenant } => (
                "iam",
                Some(principals.name),
                Some(match tenant {
                    Tenant::Users => "users",
                    Tenant::Merchant(_) => "merchant",
                }),
            ),
        };
        let mut st = s.serialize_struct("Operation", 6)?;
        st.serialize_field("event", self.event)?;
        st.serialize_field("method", &self.method)?;
        st.serialize_field("path", self.path)?;
        st.serialize_field("auth", auth)?;
        st.serialize_field("principals", &principals)?;
        st.serialize_field("tenant", &tenant)?;
        st.end()
    }
}

/// A function's routes: the axum router of its handlers, their OpenAPI paths, and the
/// operations they serve, built together by [`Routes::route`] (utoipa-axum's
/// [`OpenApiRouter`]: the router and the document's paths come from the handlers' annotations).
#[derive(Default)]
pub struct Routes {
    router: OpenApiRouter<ApiState>,
    operations: Vec<&'static Operation>,
}

impl Routes {
    /// No route yet.
    pub fn new() -> Self {
        Routes::default()
    }

    /// Routes `handler` (`utoipa_axum::routes!(handler)`: its annotation's method and path) and
    /// lists `operation`.
    ///
    /// # Panics
    /// When the annotation does not document exactly `operation`'s method and path: the
    /// declaration and the document would disagree.
    pub fn route(
        mut self,
        operation: &'static Operation,
        handler: UtoipaMethodRouter<ApiState>,
    ) -> Self {
        let (_, paths, _) = &handler;
        let documented: Vec<String> = paths
            .paths
            .iter()
            .flat_map(|(path, item)| {
                [
                    (item.get.is_some(), "GET"),
                    (item.post.is_some(), "POST"),
                    (item.put.is_some(), "PUT"),
                    (item.delete.is_some(), "DELETE"),
                    (item.patch.is_some(), "PATCH"),
                ]
                .into_iter()
                .filter(|(has, _)| *has)
                .map(move |(_, method)| format!("{method} {path}"))
            })
            .collect();
        assert!(
            documented == [operation.route_key()],
            "{} is annotated as {documented:?}",
            operation.route_key()
        );
        self.router = self.router.routes(handler);
        self.operations.push(operation);
        self
    }

    /// These routes and `other`'s.
    pub fn merge(mut self, other: Routes) -> Self {
        self.router = self.router.merge(other.router);
        self.operations.extend(other.operations);
        self
    }

    /// The operations, in the order they were routed.
    pub fn operations(&self) -> &[&'static Operation] {
        &self.operations
    }

    /// The router (its state still to be given).
    pub fn into_router(self) -> Router<ApiState> {
        self.router.split_for_parts().0
    }

    /// The operations and the OpenAPI paths and schemas of their annotations.
    pub fn into_document(self) -> (Vec<&'static Operation>, utoipa::openapi::OpenApi) {
        (self.operations, self.router.into_openapi())
    }
}
