//! Infrastructure errors: the ones that are not a business answer.
//!
//! Business outcomes (sold out, already grabbed, insufficient funds...) are values of the
//! operation's own result enum, never errors. An [`Error`](enum@Error) means "we do not know the answer":
//! the HTTP layer maps it to 503 `unavailable` with `Retry-After` (or 500 for a bug), so a Redis
//! outage can never be mistaken for "sold out".

use redis::{ErrorKind, RedisError, ServerErrorKind};
use thiserror::Error;

/// Why an operation could not produce a business answer.
#[derive(Debug, Error)]
pub enum Error {
    /// Redis is unreachable, timing out, loading, failing over or refusing writes. Retry later.
    #[error("redis unavailable: {0}")]
    Unavailable(String),
    /// Redis answered something the code does not expect (a bug, or keys written by another
    /// program). Not retryable.
    #[error("internal error: {0}")]
    Internal(String),
}

impl From<RedisError> for Error {
    fn from(e: RedisError) -> Self {
        let internal = match e.kind() {
            ErrorKind::Parse | ErrorKind::UnexpectedReturnType | ErrorKind::InvalidClientConfig => {
                true
            }
            ErrorKind::Server(ServerErrorKind::CrossSlot) => true,
            // Our scripts' own assertion failures are prefixed `ERR hongbao:`.
            ErrorKind::Server(ServerErrorKind::ResponseError) => e.to_string().contains("hongbao:"),
            _ => false,
        };
        if internal {
            Error::Internal(e.to_string())
        } else {
            Error::Unavailable(e.to_string())
        }
    }
}

impl Error {
    /// An [`Error::Internal`] for a script reply of the wrong shape.
    pub(crate) fn bad_reply(script: &str, detail: impl std::fmt::Display) -> Self {
        Error::Internal(format!("unexpected reply from {script}: {detail}"))
    }
}

impl From<crate::domain::BadRecord> for Error {
    /// A stored record of the wrong shape: [`Error::Internal`].
    fn from(e: crate::domain::BadRecord) -> Self {
        Error::Internal(e.0)
    }
}
