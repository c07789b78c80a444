//! Documentation-only schemas of the OpenAPI document ([`super::openapi`]): the error answers,
//! one schema per code (or per set of codes of the same shape) with its extra fields typed.
//! Never constructed; the handlers answer errors as [`super::error::ApiError`].

/// Declares an error answer's schema: a struct `$name` with `error` (an inline enum of the
/// listed codes), `message` and the given extra fields.
macro_rules! error_doc {
    (
        $(#[doc = $doc:literal])*
        $name:ident, $codes:ident [$($code:ident),+ $(,)?]
        $(, $(#[$fattr:meta])* $field:ident : $fty:ty)* $(,)?
    ) => {
        #[doc = concat!("Machine-readable code (`error` of `", stringify!($name), "`).")]
        #[derive(utoipa::ToSchema)]
        #[schema(rename_all = "snake_case")]
        #[allow(dead_code)]
        pub enum $codes {
            $(
                #[doc = concat!("`", stringify!($code), "`.")]
                $code,
            )+
        }

        $(#[doc = $doc])*
        #[derive(utoipa::ToSchema)]
        #[allow(dead_code)]
        pub struct $name {
            // No doc comment: utoipa would wrap the inline enum in an `allOf` with an object.
            #[schema(inline)]
            error: $codes,
            /// Human-readable explanation.
            message: String,
            $($(#[$fattr])* $field: $fty,)*
        }
    };
}

error_doc! {
    /// 400: the request is malformed or breaks a rule; nothing was written.
    InvalidRequestError, InvalidRequestCode [InvalidRequest]
}

error_doc! {
    /// 401: no valid caller identity.
    UnauthorizedError, UnauthorizedCode [Unauthorized]
}

error_doc! {
    /// 402: the balance is below the packet's total (the sender's) or the withdrawal's amount.
    InsufficientFundsError, InsufficientFundsCode [InsufficientFunds],
    /// The balance, cents.
    balance_cents: i64,
}

error_doc! {
    /// 403: the caller may not do this.
    ForbiddenError, ForbiddenCode [Forbidden]
}

error_doc! {
    /// 404: no such resource (also the answer to an unknown path).
    NotFoundError, NotFoundCode [NotFound]
}

error_doc! {
    /// 405: the path exists but not with this method (also in the `Allow` header).
    MethodNotAllowedError, MethodNotAllowedCode [MethodNotAllowed],
    /// The allowed methods, e.g. `GET, POST`.
    allow: String,
}

error_doc! {
    /// 409: the `Idempotency-Key` was used with a different request.
    IdempotencyKeyReusedError, IdempotencyKeyReusedCode [IdempotencyKeyReused]
}

error_doc! {
    /// 413: the request body is larger than the 2 MiB limit; nothing was read or written.
    PayloadTooLargeError, PayloadTooLargeCode [PayloadTooLarge]
}

error_doc! {
    /// 415: the request has a body that is not declared `Content-Type: application/json`
    /// (`charset=utf-8` is the only parameter allowed); nothing was read or written.
    UnsupportedMediaTypeError, UnsupportedMediaTypeCode [UnsupportedMediaType]
}

error_doc! {
    /// 429: a rate limit is used up; retry after `Retry-After` seconds. Nothing written.
    RateLimitedError, RateLimitedCode [RateLimited]
}

error_doc! {
    /// 500: a bug; not retryable.
    InternalError, InternalCode [Internal]
}

error_doc! {
    /// 503: Redis trouble; retry after `Retry-After` seconds (the body's `message` says what a retry does where that is not obvious).
    UnavailableError, UnavailableCode [Unavailable]
}
