//! The rules of hongbao as pure code: money in `i64` cents, the split algorithms, packet limits
//! and validation, wallets, the order-code permutation and vote scoring.
//!
//! Nothing here knows Redis, HTTP or Lambda: the layer above ([`crate::store`]) runs the rules
//! that must be atomic as Lua scripts and turns replies into these types, and the layer above
//! that ([`crate::api`]) turns them into HTTP answers. `make test` checks that no file under
//! `domain/` names `redis`, `lambda_http`, `lambda_runtime`, `aws_lambda_events`, `axum`,
//! `crate::store` or `crate::api` (`scripts/check-layers.sh`).

pub mod order_codes;
pub mod packets;
pub mod settings;
pub mod split;
pub mod voting;
pub mod wallet;

pub use settings::{ConfigError, Lookup};

/// A request that breaks a rule: the message names the field and the rule (the API answers
/// 400 `invalid_request` with it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Invalid(pub String);

impl Invalid {
    /// An [`Invalid`] with `message`.
    pub fn new(message: impl Into<String>) -> Self {
        Invalid(message.into())
    }
}

/// A stored record that does not have the shape the rules write (a bug, or keys written by
/// another program). The store turns it into an internal error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BadRecord(pub String);

/// Whether `id` is a valid user id: 1 to 64 characters of `[A-Za-z0-9_-]`.
pub fn is_user_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Whether `s` is a valid idempotency key or deposit reference: 1 to 64 visible ASCII
/// characters.
pub fn is_reference(s: &str) -> bool {
    (1..=64).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_graphic())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_ids_and_references() {
        assert!(is_user_id("alice_01-x"));
        assert!(!is_user_id(""));
        assert!(!is_user_id(&"a".repeat(65)));
        assert!(is_user_id(&"a".repeat(64)));
        assert!(!is_user_id("a{b}"));
        assert!(!is_user_id("é"));
        assert!(is_reference("order-42/x"));
        assert!(!is_reference("a b"));
        assert!(!is_reference(&"r".repeat(65)));
    }
}
