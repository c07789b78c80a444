//! What a sandbox remembers of the articles it has voted on ([`ArticleMemory`], one per
//! [`Store`](crate::store::Store)): each article's poster and groups, sent with the next vote so
//! that `vote.lua` runs in one round trip (a vote storm's whole cost falls on the site's one
//! hash slot).
//!
//! An article's poster never changes, so a remembered poster cannot go stale while the article
//! exists: the script tells an open article from one HMGET of the vote record. Should the site's
//! data be replaced (an id reused by a new article), the record holds no vote of the remembered
//! poster, the script falls back to reading the article, and its reply names the poster to
//! remember instead.
//!
//! An article's groups may change at any time; the script checks the remembered ones against
//! the article's before it writes, and when they differ writes nothing and names the article's
//! groups, which [`vote`](super::store::vote()) remembers and sends again.

use std::collections::HashMap;
use std::sync::Mutex;

/// At most this many articles are remembered per sandbox; when full, the memory starts over.
const MAX_ENTRIES: usize = 10_000;

/// What is remembered of one article.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Remembered {
    /// The poster's user id, once a reply named it.
    pub(crate) poster: Option<String>,
    /// The article's group names, as the last reply that named them gave them.
    pub(crate) groups: Vec<String>,
}

/// Article id -> what this sandbox remembers of it.
#[derive(Debug, Default)]
pub(crate) struct ArticleMemory {
    articles: Mutex<HashMap<u64, Remembered>>,
}

impl ArticleMemory {
    fn with<T>(&self, f: impl FnOnce(&mut HashMap<u64, Remembered>) -> T) -> T {
        f(&mut self.articles.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// What is remembered of article `id` (nothing yet: no poster, no groups).
    pub(crate) fn get(&self, id: u64) -> Remembered {
        self.with(|m| m.get(&id).cloned().unwrap_or_default())
    }

    /// Changes what is remembered of article `id` with `f`.
    fn update(&self, id: u64, f: impl FnOnce(&mut Remembered)) {
        self.with(|m| {
            if m.len() >= MAX_ENTRIES && !m.contains_key(&id) {
                m.clear();
            }
            f(m.entry(id).or_default());
        });
    }

    /// Remembers that `poster` posted article `id`.
    pub(crate) fn remember_poster(&self, id: u64, poster: &str) {
        self.update(id, |r| r.poster = Some(poster.to_string()));
    }

    /// Remembers that article `id` is in `groups`.
    pub(crate) fn remember_groups(&self, id: u64, groups: Vec<String>) {
        self.update(id, |r| r.groups = groups);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_article_never_seen_is_remembered_as_nothing() {
        let memory = ArticleMemory::default();

        assert_eq!(memory.get(1), Remembered::default());
    }

    #[test]
    fn the_poster_and_the_groups_are_remembered_apart() {
        let memory = ArticleMemory::default();

        memory.remember_poster(1, "alice");
        memory.remember_groups(1, vec!["rust".into()]);

        let remembered = memory.get(1);
        assert_eq!(remembered.poster.as_deref(), Some("alice"));
        assert_eq!(remembered.groups, ["rust"]);
    }

    #[test]
    fn a_full_memory_starts_over() {
        let memory = ArticleMemory::default();
        for id in 1..=MAX_ENTRIES as u64 {
            memory.remember_poster(id, "bob");
        }

        memory.remember_poster(0, "dave");

        assert_eq!(memory.get(2), Remembered::default(), "started over");
        assert_eq!(memory.get(0).poster.as_deref(), Some("dave"));
    }

    #[test]
    fn an_article_already_remembered_does_not_start_the_memory_over() {
        let memory = ArticleMemory::default();
        for id in 1..=MAX_ENTRIES as u64 {
            memory.remember_poster(id, "bob");
        }

        memory.remember_poster(1, "carol");

        assert_eq!(memory.get(1).poster.as_deref(), Some("carol"));
        assert_eq!(memory.get(2).poster.as_deref(), Some("bob"));
    }
}
