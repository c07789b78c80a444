//! A lock that cannot release someone else's lock.
//!
//! Acquire: `SET key <random token> NX PX <ttl>`. Release: `lua/unlock.lua` deletes the key only if
//! it still holds our token, so a holder whose lock expired (and was taken by another) cannot
//! delete the new holder's lock. This fixes the SETNX/GETSET lock of the source blog post on
//! concurrency control for red-packet and coupon grabs (no owner token, client clocks). The lock is
//! an optimisation (it keeps overlapping runs from duplicating work); correctness never depends on
//! it, because every protected step is idempotent.

use crate::store::scripts::UnlockCall;
use rand::RngCore;

use super::error::Error;
use super::scripts::Call;
use super::Store;

/// A held lock. Release it with [`Lock::release`]; if dropped, it expires after its TTL.
#[derive(Debug)]
pub struct Lock {
    key: String,
    token: String,
}

impl Lock {
    /// Tries once to take `key` for `ttl_ms` milliseconds. `Ok(None)` if someone holds it.
    ///
    /// # Errors
    /// [`Error::Unavailable`] when Redis cannot be reached.
    pub async fn try_acquire(store: &Store, key: &str, ttl_ms: u64) -> Result<Option<Lock>, Error> {
        let mut bytes = [0u8; 16];
        rand::rng().fill_bytes(&mut bytes);
        let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let mut conn = store.conn().await?;
        let ok: Option<String> = redis::cmd("SET")
            .arg(key)
            .arg(&token)
            .arg("NX")
            .arg("PX")
            .arg(ttl_ms)
            .query_async(&mut conn)
            .await?;
        Ok(ok.map(|_| Lock {
            key: key.to_string(),
            token,
        }))
    }

    /// Releases the lock if it is still ours. Returns whether it was.
    ///
    /// # Errors
    /// [`Error::Unavailable`] when Redis cannot be reached (the lock then expires by TTL).
    pub async fn release(self, store: &Store) -> Result<bool, Error> {
        let mut conn = store.conn().await?;
        let n: i64 = UnlockCall {
            lock: &self.key,
            token: &self.token,
        }
        .invocation()
        .invoke_async(&mut conn)
        .await?;
        Ok(n == 1)
    }
}
