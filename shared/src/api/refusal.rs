//! An operation's refusals, declared once beside its handler (`refusals!`): a typed enum the
//! handler answers with, whose status, code and extra fields are also what the OpenAPI
//! document says ([`Refusals`]: the operation's error answers and their schemas). A code or
//! field renamed in the declaration changes both; one spelled differently elsewhere fails to
//! build or fails the contract's tests.
//!
//! The answers every route shares (401, 413, 415, 500, 503, and 400 for a body or path that
//! breaks the contract) are not declared per operation ([`super::openapi`]'s `CommonAnswers`).

use std::collections::BTreeMap;

use utoipa::openapi::{RefOr, Response, Schema};

/// What an operation's refusal enum documents, as plain functions (an [`super::Operation`]
/// holds them): its error answers by status, and the schemas they refer to.
#[derive(Clone, Copy)]
pub struct Refusals {
    /// The error answers by status (`"409"` to its response).
    pub responses: fn() -> BTreeMap<String, RefOr<Response>>,
    /// Appends each schema the answers refer to, with its name.
    pub schemas: fn(&mut Vec<(String, RefOr<Schema>)>),
}

impl std::fmt::Debug for Refusals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Refusals")
    }
}

impl PartialEq for Refusals {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::fn_addr_eq(self.responses, other.responses)
    }
}

impl Eq for Refusals {}

impl Refusals {
    /// An operation that refuses nothing beyond the answers every route shares.
    pub const NONE: Refusals = Refusals {
        responses: BTreeMap::new,
        schemas: |_| {},
    };
}

/// The text of a refusal's doc comment lines, joined and trimmed.
#[doc(hidden)]
pub fn doc_text(lines: &[&str]) -> String {
    lines
        .iter()
        .map(|l| l.trim())
        .collect::<Vec<_>>()
        .join(" ")
        .trim()
        .to_string()
}

/// One group of refusals of one status, as `refusals!` declares it: the status, the schema
/// the answer refers to (the group's own, or the union it is part of), the refusals' lines and
/// the `Retry-After` description.
#[doc(hidden)]
pub struct Group {
    /// The status.
    pub status: u16,
    /// The answer's schema.
    pub target: &'static str,
    /// "`code`: what it means", one per refusal.
    pub lines: Vec<String>,
    /// What `Retry-After` says, if the answer has one.
    pub retry_after: Option<&'static str>,
}

/// The answers of `groups`: one per status; groups of one status must name one union (the
/// answer's schema is then that union of their schemas).
#[doc(hidden)]
pub fn responses(operation: &str, groups: Vec<Group>) -> BTreeMap<String, RefOr<Response>> {
    let mut merged: Vec<Group> = Vec::new();
    for g in groups {
        match merged.iter_mut().find(|m| m.status == g.status) {
            Some(m) => {
                assert!(
                    m.target == g.target,
                    "{operation}: two groups answer {} without naming one union",
                    g.status
                );
                m.lines.extend(g.lines);
                m.retry_after = m.retry_after.or(g.retry_after);
            }
            None => merged.push(g),
        }
    }
    merged
        .into_iter()
        .map(|g| {
            (
                g.status.to_string(),
                response(list(&g.lines), g.target, g.retry_after),
            )
        })
        .collect()
}

/// The schema of a union of refusal bodies of one status, told apart by `error`: `members` are
/// each body's codes and schema name.
#[doc(hidden)]
pub fn union_schema(status: u16, members: &[(Vec<&str>, &str)]) -> RefOr<Schema> {
    use utoipa::openapi::schema::{Discriminator, OneOfBuilder};
    let mut one_of = OneOfBuilder::new();
    let mut discriminator = Discriminator::new("error");
    let mut codes = Vec::new();
    for (member_codes, schema) in members {
        let mut reference = utoipa::openapi::Ref::from_schema_name(*schema);
        let listed: Vec<String> = member_codes.iter().map(|c| format!("`{c}`")).collect();
        reference.description = format!("{}.", listed.join(", "));
        one_of = one_of.item(RefOr::Ref(reference));
        for code in member_codes {
            discriminator.mapping.insert(
                (*code).to_string(),
                format!("#/components/schemas/{schema}"),
            );
            codes.push(format!("`{code}`"));
        }
    }
    RefOr::T(Schema::OneOf(
        one_of
            .description(Some(format!(
                "The {status} answers, told apart by `error`: {}.",
                codes.join(", ")
            )))
            .discriminator(Some(discriminator))
            .build(),
    ))
}

/// An answer's description: its one refusal's line, or a Markdown list of them.
#[doc(hidden)]
pub fn list(lines: &[String]) -> String {
    match lines {
        [one] => one.clone(),
        many => many
            .iter()
            .map(|l| format!("- {l}"))
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

/// The schema of a refusal's body: `{"error": one of codes, "message", extras...}`, every
/// field required; described by `about` (the group's doc comment) or, without one, by the
/// status and the codes.
#[doc(hidden)]
pub fn body_schema(
    status: u16,
    about: &str,
    codes: &[&str],
    extras: Vec<(&str, RefOr<Schema>)>,
) -> RefOr<Schema> {
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    let listed: Vec<String> = codes.iter().map(|c| format!("`{c}`")).collect();
    let description = if about.is_empty() {
        format!("{status}: {}.", listed.join(", "))
    } else {
        about.to_string()
    };
    let mut object = ObjectBuilder::new()
        .schema_type(Type::Object)
        .description(Some(description))
        .property(
            "error",
            ObjectBuilder::new()
                .schema_type(Type::String)
                .enum_values(Some(codes.iter().copied())),
        )
        .required("error")
        .property(
            "message",
            ObjectBuilder::new()
                .schema_type(Type::String)
                .description(Some("Human-readable explanation.")),
        )
        .required("message");
    for (name, schema) in extras {
        object = object.property(name, schema).required(name);
    }
    RefOr::T(Schema::Object(object.build()))
}

/// A refusal's answer in the document: `description`, the JSON body of schema `schema`, and
/// `Retry-After` (integer seconds) described by `retry_after` when it has one.
#[doc(hidden)]
pub fn response(description: String, schema: &str, retry_after: Option<&str>) -> RefOr<Response> {
    use utoipa::openapi::header::HeaderBuilder;
    use utoipa::openapi::{Content, Ref, ResponseBuilder};
    use utoipa::PartialSchema;
    let mut r = ResponseBuilder::new().description(description).content(
        "application/json",
        Content::new(Some(Ref::from_schema_name(schema))),
    );
    if let Some(about) = retry_after {
        r = r.header(
            "Retry-After",
            HeaderBuilder::new()
                .schema(Some(<u32 as PartialSchema>::schema()))
                .description(Some(about))
                .build(),
        );
    }
    RefOr::T(r.build())
}

/// A refusal's extra field, as the document shows it: a body type by reference to its named
/// schema ([`by_ref`]), anything else inline ([`inline`]).
pub trait RefusalField: serde::Serialize {
    /// The property's schema, described by `description`; adds what it refers to to `out`.
    fn schema(description: &str, out: &mut Vec<(String, RefOr<Schema>)>) -> RefOr<Schema>;
}

/// `T`'s schema inline, with `description`.
pub fn inline<T: utoipa::PartialSchema>(description: &str) -> RefOr<Schema> {
    let described = (!description.is_empty()).then(|| description.to_string());
    match T::schema() {
        RefOr::T(Schema::Object(mut o)) => {
            o.description = described.or(o.description);
            RefOr::T(Schema::Object(o))
        }
        RefOr::T(Schema::Array(mut a)) => {
            a.description = described.or(a.description);
            RefOr::T(Schema::Array(a))
        }
        other => other,
    }
}

/// A reference to `T`'s named schema, with `description`; `T` and what it refers to are added
/// to `out`.
pub fn by_ref<T: utoipa::ToSchema>(
    description: &str,
    out: &mut Vec<(String, RefOr<Schema>)>,
) -> RefOr<Schema> {
    use utoipa::openapi::schema::Ref;
    out.push((T::name().to_string(), T::schema()));
    T::schemas(out);
    let mut reference = Ref::from_schema_name(T::name());
    reference.description = description.to_string();
    RefOr::Ref(reference)
}

macro_rules! inline_fields {
    ($($t:ty),+) => {$(
        impl RefusalField for $t {
            fn schema(description: &str, _: &mut Vec<(String, RefOr<Schema>)>) -> RefOr<Schema> {
                inline::<$t>(description)
            }
        }
    )+};
}
inline_fields!(i64, u32, u64, String, Vec<String>);

/// An RFC 3339 time (`2026-01-01T12:00:00.000Z`), as a refusal's extra field.
#[derive(Debug, serde::Serialize)]
#[serde(transparent)]
pub struct Rfc3339(pub String);

impl RefusalField for Rfc3339 {
    fn schema(description: &str, _: &mut Vec<(String, RefOr<Schema>)>) -> RefOr<Schema> {
        use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};
        let mut o = ObjectBuilder::new()
            .schema_type(Type::String)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::DateTime)));
        if !description.is_empty() {
            o = o.description(Some(description));
        }
        RefOr::T(Schema::Object(o.build()))
    }
}

/// A count of at least 1 (a limit), as a refusal's extra field.
#[derive(Debug, serde::Serialize)]
#[serde(transparent)]
pub struct Limit(pub u32);

impl RefusalField for Limit {
    fn schema(description: &str, _: &mut Vec<(String, RefOr<Schema>)>) -> RefOr<Schema> {
        match inline::<u32>(description) {
            RefOr::T(Schema::Object(mut o)) => {
                o.minimum = Some(1.into());
                RefOr::T(Schema::Object(o))
            }
            other => other,
        }
    }
}

/// A business day, `YYYY-MM-DD`, as a refusal's extra field.
#[derive(Debug, serde::Serialize)]
#[serde(transparent)]
pub struct Day(pub String);

impl RefusalField for Day {
    fn schema(description: &str, _: &mut Vec<(String, RefOr<Schema>)>) -> RefOr<Schema> {
        use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};
        let mut o = ObjectBuilder::new()
            .schema_type(Type::String)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Date)));
        if !description.is_empty() {
            o = o.description(Some(description));
        }
        RefOr::T(Schema::Object(o.build()))
    }
}

/// Declares body types as refusal fields shown by reference to their named schema.
macro_rules! ref_fields {
    ($($t:ty),+) => {$(
        impl $crate::api::refusal::RefusalField for $t {
            fn schema(
                description: &str,
                out: &mut Vec<(String, ::utoipa::openapi::RefOr<::utoipa::openapi::Schema>)>,
            ) -> ::utoipa::openapi::RefOr<::utoipa::openapi::Schema> {
                $crate::api::refusal::by_ref::<$t>(description, out)
            }
        }
    )+};
}
pub(crate) use ref_fields;

/// Declares an operation's refusals: a `pub enum` of them, what each answers
/// (`refusal.because(message)` is the [`super::ApiError`]: status, code, message, extras), and
/// [`Refusals`] for the document (`NAME::REFUSALS`).
///
/// ```ignore
/// refusals! {
///     /// What `POST /packets/{id}/grab` refuses.
///     pub enum GrabRefusal {
///         409 AlreadyGrabbedError {
///             /// the caller already grabbed a share: `share` is it
///             AlreadyGrabbed = "already_grabbed" {
///                 /// The share the caller grabbed earlier.
///                 share: ShareBody,
///             },
///         }
///         410 GrabGoneError {
///             /// every share has been grabbed; nothing written
///             SoldOut = "sold_out",
///         }
///         429 RateLimitedError retry_after "seconds to wait before retrying" {
///             /// too many grab attempts; nothing written
///             RateLimited = "rate_limited",
///         }
///     }
/// }
/// ```
///
/// Each status has one group, named by the schema of its body; a schema name used by several
/// operations must mean the same body everywhere (a test of the document checks it).
macro_rules! refusals {
    (
        $(#[$edoc:meta])*
        $vis:vis enum $name:ident {
            $(
                $(#[doc = $gdoc:literal])*
                $status:literal $schema:ident $(in $union:ident)? $(retry_after $retry:literal)? {
                    $(
                        $(#[doc = $vdoc:literal])*
                        $variant:ident = $code:literal $({
                            $(
                                $(#[doc = $fdoc:literal])*
                                $field:ident : $fty:ty
                            ),* $(,)?
                        })?
                    ),+ $(,)?
                }
            )+
        }
    ) => {
        $(#[$edoc])*
        #[derive(Debug)]
        $vis enum $name {
            $($(
                $(#[doc = $vdoc])*
                $variant $({ $( $(#[doc = $fdoc])* $field: $fty ),* })?,
            )+)+
        }

        impl $name {
            /// The answer's HTTP status.
            pub fn status(&self) -> ::axum::http::StatusCode {
                let code: u16 = match self {
                    $($( Self::$variant { .. } => $status, )+)+
                };
                ::axum::http::StatusCode::from_u16(code).expect("a declared status")
            }

            /// The answer's `error` code.
            pub fn code(&self) -> &'static str {
                match self {
                    $($( Self::$variant { .. } => $code, )+)+
                }
            }

            /// The answer: status, code, `message` and the refusal's fields as extras.
            pub fn because(self, message: impl Into<String>) -> $crate::api::ApiError {
                #[allow(unused_mut)]
                let mut e = $crate::api::ApiError::new(self.status(), self.code(), message);
                match self {
                    $($(
                        Self::$variant $({ $($field),* })? => {
                            $($( e = e.with(stringify!($field), $field); )*)?
                        }
                    )+)+
                }
                e
            }

            /// What the OpenAPI document says of these refusals.
            pub const REFUSALS: $crate::api::refusal::Refusals = $crate::api::refusal::Refusals {
                responses: || {
                    let mut groups = Vec::new();
                    $(
                        groups.push($crate::api::refusal::Group {
                            status: $status,
                            target: [$(stringify!($union),)? stringify!($schema)][0],
                            lines: vec![$(
                                format!(
                                    "`{}`: {}",
                                    $code,
                                    $crate::api::refusal::doc_text(&[$($vdoc),*])
                                )
                            ),+],
                            retry_after: None $(.or(Some($retry)))?,
                        });
                    )+
                    $crate::api::refusal::responses(stringify!($name), groups)
                },
                schemas: |out| {
                    $(
                        let extras: Vec<(&str, ::utoipa::openapi::RefOr<::utoipa::openapi::Schema>)> = vec![
                            $($($(
                                (
                                    stringify!($field),
                                    <$fty as $crate::api::refusal::RefusalField>::schema(
                                        &$crate::api::refusal::doc_text(&[$($fdoc),*]),
                                        out,
                                    ),
                                ),
                            )*)?)+
                        ];
                        let schema = $crate::api::refusal::body_schema(
                            $status,
                            &$crate::api::refusal::doc_text(&[$($gdoc),*]),
                            &[$($code),+],
                            extras,
                        );
                        out.push((stringify!($schema).to_string(), schema));
                    )+
                    #[allow(unused_mut)]
                    let mut unions: Vec<(&str, u16, Vec<(Vec<&str>, &str)>)> = Vec::new();
                    $(
                        let union: Option<&str> = None $(.or(Some(stringify!($union))))?;
                        if let Some(union) = union {
                            let member = (vec![$($code),+], stringify!($schema));
                            match unions.iter_mut().find(|u| u.0 == union) {
                                Some(u) => u.2.push(member),
                                None => unions.push((union, $status, vec![member])),
                            }
                        }
                    )+
                    for (name, status, members) in unions {
                        out.push((
                            name.to_string(),
                            $crate::api::refusal::union_schema(status, &members),
                        ));
                    }
                },
            };
        }
    };
}
pub(crate) use refusals;

#[cfg(test)]
mod tests {
    use super::super::operation::{Auth, Method, Operation};

    refusals! {
        /// A refusal of `GET /packets/{id}` as `crate::packets::view` declares it.
        enum ViewLike {
            404 NotFoundError {
                /// no such packet
                NotFound = "not_found",
            }
        }
    }

    refusals! {
        /// A refusal that reuses `NotFoundError`'s name with another code.
        enum Renamed {
            404 NotFoundError {
                /// no such packet
                Missing = "missing",
            }
        }
    }

    const VIEW: Operation = Operation {
        event: "ViewPacket",
        method: Method::Get,
        path: "/packets/{id}",
        auth: Auth::Jwt,
        refusals: ViewLike::REFUSALS,
        replay: None,
    };

    const GRAB: Operation = Operation {
        event: "GrabPacket",
        method: Method::Post,
        path: "/packets/{id}/grab",
        auth: Auth::Jwt,
        refusals: Renamed::REFUSALS,
        replay: None,
    };

    /// A refusal's answer is its declared status, code, message and fields.
    #[test]
    fn a_refusal_answers_as_declared() {
        let e = ViewLike::NotFound.because("no packet p");
        assert_eq!((e.status.as_u16(), e.code), (404, "not_found"));
        let e = Renamed::Missing.because("gone");
        assert_eq!((e.status.as_u16(), e.code), (404, "missing"));
    }

    /// Two declarations that give one schema name different codes cannot both be documented:
    /// a code renamed in one operation only fails here, not in a client.
    #[test]
    #[should_panic(expected = "two bodies are named NotFoundError")]
    fn one_schema_name_with_two_bodies_is_refused() {
        use utoipa_axum::routes;
        let routes = crate::api::Routes::new()
            .route(&VIEW, routes!(crate::packets::view::http::view))
            .route(&GRAB, routes!(crate::packets::grab::http::grab));
        crate::api::openapi::document(routes);
    }
}
