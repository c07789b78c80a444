//! Group names and group changes: which names an article may be filed under, and a checked
//! `PUT /articles/{id}/groups` change.

use super::{MAX_GROUPS_PER_REQUEST, MAX_GROUP_NAME_CHARS};

/// Whether `name` is a valid group name: 1 to 32 characters of `[a-z0-9-]`.
pub fn is_group_name(name: &str) -> bool {
    (1..=MAX_GROUP_NAME_CHARS).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// A validated group change: names to add the article to and to remove it from (disjoint, each
/// a [`is_group_name`], at most [`MAX_GROUPS_PER_REQUEST`] each, duplicates dropped).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GroupChange {
    /// Groups to add the article to.
    pub add: Vec<String>,
    /// Groups to remove it from.
    pub remove: Vec<String>,
}

impl GroupChange {
    /// Checks and normalizes (sorts, de-duplicates) a change.
    ///
    /// # Errors
    /// A message naming the problem: a bad name, too many names, a name in both lists.
    pub fn new(add: Vec<String>, remove: Vec<String>) -> Result<Self, String> {
        let clean = |mut names: Vec<String>, field: &str| -> Result<Vec<String>, String> {
            if names.len() > MAX_GROUPS_PER_REQUEST {
                return Err(format!(
                    "{field} holds at most {MAX_GROUPS_PER_REQUEST} group names"
                ));
            }
            if let Some(bad) = names.iter().find(|n| !is_group_name(n)) {
                return Err(format!(
                    "group name {bad:?} in {field} must be 1 to {MAX_GROUP_NAME_CHARS} characters of [a-z0-9-]"
                ));
            }
            names.sort();
            names.dedup();
            Ok(names)
        };
        let (add, remove) = (clean(add, "add")?, clean(remove, "remove")?);
        if let Some(both) = add.iter().find(|n| remove.binary_search(n).is_ok()) {
            return Err(format!("group {both:?} is in both add and remove"));
        }
        Ok(GroupChange { add, remove })
    }
}
