//! The Redis password from AWS Secrets Manager (`REDIS_PASSWORD_SECRET_ARN`), read once at
//! Init, so the password is in no function's environment (where `lambda:GetFunctionConfiguration`
//! would show it) and a rotated secret reaches the next sandboxes without a deployment.
//!
//! The secret's `SecretString` is the password itself (what `{{resolve:secretsmanager:...}}`
//! put in the environment before). Nothing here logs or returns the secret's value in an
//! error: an error names the variable, the secret id and the service's error code.

use aws_sdk_secretsmanager::error::{DisplayErrorContext, ProvideErrorMetadata};
use aws_sdk_secretsmanager::Client;

use crate::store::redis_auth::REDIS_PASSWORD_SECRET_ARN;

/// Why the password could not be read (never its value); `Debug` as `Display` (what a
/// function's `main` prints when Init fails).
#[derive(thiserror::Error)]
#[error("{variable}={secret_id}: {reason}", variable = REDIS_PASSWORD_SECRET_ARN.name)]
pub struct SecretError {
    /// The secret's ARN or name, as set.
    pub secret_id: String,
    /// The service's error, or what the secret lacks.
    pub reason: String,
}

impl std::fmt::Debug for SecretError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

/// The string of secret `secret_id` (its current version) through `client`.
///
/// # Errors
/// [`SecretError`] when the call fails (no such secret, access denied, the service
/// unreachable: the service's message) or the secret has no string (a binary secret) or an
/// empty one.
pub async fn read_password(client: &Client, secret_id: &str) -> Result<String, SecretError> {
    let fail = |reason: String| SecretError {
        secret_id: secret_id.to_string(),
        reason,
    };
    let out = client
        .get_secret_value()
        .secret_id(secret_id)
        .send()
        .await
        .map_err(|e| {
            fail(match (e.code(), e.message()) {
                (Some(code), Some(message)) => format!("{code}: {message}"),
                (Some(code), None) => code.to_string(),
                // Not the service's answer (a timeout, no route, no credentials).
                _ => DisplayErrorContext(&e).to_string(),
            })
        })?;
    match out.secret_string() {
        Some(s) if !s.is_empty() => Ok(s.to_string()),
        Some(_) => Err(fail("the secret's string is empty".into())),
        None => Err(fail("the secret has no string (a binary secret?)".into())),
    }
}
