//! The posters of the articles a sandbox has voted on ([`ArticlePosters`], one per
//! [`Store`](crate::store::Store)), so that `lua/vote.lua` can tell an open article from one
//! HMGET of the vote record (a vote storm's whole cost falls on the site's one hash slot).
//!
//! An article's poster never changes, so a remembered poster cannot go stale while the article
//! exists. Should the site's data be replaced (an id reused by a new article), the record holds
//! no vote of the remembered poster, the script falls back to reading the article, and its reply
//! names the poster to remember instead.

use std::collections::HashMap;
use std::sync::Mutex;

/// At most this many articles are remembered per sandbox; when full, the memory starts over.
const MAX_ENTRIES: usize = 10_000;

/// Article id -> poster's user id, for the articles this sandbox has voted on.
#[derive(Debug, Default)]
pub(crate) struct ArticlePosters {
    posters: Mutex<HashMap<u64, String>>,
}

impl ArticlePosters {
    fn with<T>(&self, f: impl FnOnce(&mut HashMap<u64, String>) -> T) -> T {
        f(&mut self.posters.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// The remembered poster of article `id`.
    pub(crate) fn get(&self, id: u64) -> Option<String> {
        self.with(|p| p.get(&id).cloned())
    }

    /// Remembers that `poster` posted article `id`.
    pub(crate) fn remember(&self, id: u64, poster: &str) {
        self.with(|p| {
            if p.len() >= MAX_ENTRIES && !p.contains_key(&id) {
                p.clear();
            }
            p.insert(id, poster.to_string());
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_and_starts_over_when_full() {
        let posters = ArticlePosters::default();
        assert_eq!(posters.get(1), None);
        posters.remember(1, "alice");
        assert_eq!(posters.get(1).as_deref(), Some("alice"));
        for id in 2..=MAX_ENTRIES as u64 {
            posters.remember(id, "bob");
        }
        posters.remember(1, "carol");
        assert_eq!(posters.get(1).as_deref(), Some("carol"));
        posters.remember(0, "dave");
        assert_eq!(posters.get(2), None, "full: started over");
        assert_eq!(posters.get(0).as_deref(), Some("dave"));
    }
}
