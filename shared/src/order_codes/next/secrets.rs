//! The day secrets this sandbox remembers, sent to `order_code.lua` as guesses.

use std::sync::Mutex;

/// Day secrets this sandbox has seen, as `(Redis URL, day key, secret)`, newest last: sent as
/// guesses, so that a call costs Redis one `TIME` and one `HINCRBY`. A wrong guess (another
/// server behind the URL, a flushed database) only costs the script a second step, and the
/// script always answers with the real secret, which replaces the guess.
static SECRETS: Mutex<Vec<(String, String, String)>> = Mutex::new(Vec::new());

/// How many day secrets [`SECRETS`] keeps.
const CACHED_SECRETS: usize = 8;

pub(super) fn known_secret(url: &str, key: &str) -> Option<String> {
    let cache = SECRETS.lock().unwrap_or_else(|e| e.into_inner());
    cache
        .iter()
        .rev()
        .find(|(u, k, _)| u == url && k == key)
        .map(|(_, _, s)| s.clone())
}

pub(super) fn remember_secret(url: &str, key: &str, secret: &str) {
    let mut cache = SECRETS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(i) = cache.iter().position(|(u, k, _)| u == url && k == key) {
        if cache[i].2 == secret {
            return;
        }
        cache.remove(i);
    }
    if cache.len() >= CACHED_SECRETS {
        cache.remove(0);
    }
    cache.push((url.to_string(), key.to_string(), secret.to_string()));
}
