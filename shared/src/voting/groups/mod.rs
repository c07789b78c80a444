//! `PUT /articles/{id}/groups`: the poster adds the article to groups or removes it: the handler
//! ([`http`]), the store step ([`store`]) and its script (`article_groups.lua`), side by side.

pub mod http;
pub mod store;
