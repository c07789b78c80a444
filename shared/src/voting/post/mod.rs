//! `POST /articles`: post an article with the poster's own up-vote: the handler ([`http`]), the
//! store step ([`store`]) and its script (`article_post.lua`), side by side.

pub mod http;
pub mod store;
