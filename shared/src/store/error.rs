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
    /// Redis answered something the code does not expect (a bug, keys written by another
    /// program such as a `WRONGTYPE` reply, or an ACL that refuses a command). Not retryable:
    /// the API answers 500.
    #[error("internal error: {0}")]
    Internal(String),
}

impl From<RedisError> for Error {
    /// [`Error::Unavailable`] only for what a retry can fix (`is_transient`); every other
    /// Redis error ([`Error::Internal`]) is a bug or a misconfiguration that retrying would
    /// only repeat: `WRONGTYPE` (a key of another type under our name), `NOPERM` (an ACL that
    /// forbids a command), `CROSSSLOT`, a script's own `ERR hongbao:` assertion, an unknown
    /// command, a reply of the wrong shape.
    fn from(e: RedisError) -> Self {
        if is_transient(&e) {
            Error::Unavailable(e.to_string())
        } else {
            Error::Internal(e.to_string())
        }
    }
}

/// Whether a retry of the same call can succeed: no connection, a timeout, a server that is
/// loading, failing over, read-only (a demoted primary), out of memory or busy with a script,
/// a cluster that is down or resharding (`TRYAGAIN`, `CLUSTERDOWN`, `MASTERDOWN`, `MOVED`,
/// `ASK`), a refused login (an IAM token being rotated), `NOREPLICAS` / `MISCONF`, the
/// maximum number of clients, and the store's own `WAIT` shortfall (kind `Client`).
pub(crate) fn is_transient(e: &RedisError) -> bool {
    if e.is_io_error() || e.is_timeout() || e.is_connection_dropped() {
        return true;
    }
    match e.kind() {
        ErrorKind::Io
        | ErrorKind::Client
        | ErrorKind::AuthenticationFailed
        | ErrorKind::ClusterConnectionNotFound => true,
        ErrorKind::Server(kind) => match kind {
            ServerErrorKind::BusyLoading
            | ServerErrorKind::TryAgain
            | ServerErrorKind::ClusterDown
            | ServerErrorKind::MasterDown
            | ServerErrorKind::ReadOnly
            | ServerErrorKind::Moved
            | ServerErrorKind::Ask
            | ServerErrorKind::NoScript => true,
            // `ERR ...` is generic: only the known transient texts are retried.
            ServerErrorKind::ResponseError => {
                let text = e.to_string();
                !text.contains("hongbao:") && text.contains("max number of clients")
            }
            _ => false,
        },
        ErrorKind::Extension => matches!(
            e.code(),
            Some("OOM" | "BUSY" | "NOREPLICAS" | "MISCONF" | "LOADING" | "UNBLOCKED")
        ),
        _ => false,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A server error reply as redis-rs parses it off the wire.
    fn server(text: &str) -> RedisError {
        match redis::parse_redis_value(format!("-{text}\r\n").as_bytes()) {
            Ok(redis::Value::ServerError(e)) => e.into(),
            Err(e) => e,
            Ok(other) => panic!("not an error reply: {other:?}"),
        }
    }

    #[test]
    fn transient_or_not() {
        for text in [
            "LOADING Redis is loading the dataset in memory",
            "READONLY You can't write against a read only replica.",
            "TRYAGAIN Multiple keys request during rehashing of slot",
            "CLUSTERDOWN The cluster is down",
            "OOM command not allowed when used memory > 'maxmemory'.",
            "BUSY Redis is busy running a script.",
            "NOREPLICAS Not enough good replicas to write.",
            "ERR max number of clients reached",
        ] {
            assert!(
                matches!(Error::from(server(text)), Error::Unavailable(_)),
                "{text}"
            );
        }
        for text in [
            "WRONGTYPE Operation against a key holding the wrong kind of value",
            "NOPERM User app has no permissions to run the 'keys' command",
            "CROSSSLOT Keys in request don't hash to the same slot",
            "ERR hongbao: grabbed_count and the share list disagree",
            "ERR unknown command 'FOO'",
        ] {
            assert!(
                matches!(Error::from(server(text)), Error::Internal(_)),
                "{text}"
            );
        }
    }
}
