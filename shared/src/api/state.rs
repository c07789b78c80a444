//! [`ApiState`]: what every handler of every router gets.

use std::sync::Arc;

use super::auth::AuthMode;
use crate::store::Store;

/// What every handler gets: the store (connection and feature rules) and the identity mode.
/// Cheap to clone.
#[derive(Clone)]
pub struct ApiState {
    /// The Redis store, built once per sandbox.
    pub store: Arc<Store>,
    /// Where the caller's identity comes from.
    pub auth: AuthMode,
}

impl ApiState {
    /// A state over `store` with identity from `auth`.
    pub fn new(store: Store, auth: AuthMode) -> Self {
        ApiState {
            store: Arc::new(store),
            auth,
        }
    }
}
