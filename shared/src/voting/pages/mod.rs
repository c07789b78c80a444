//! `GET /articles` and `GET /groups/{group}/articles`: the site's and a group's pages: the handler
//! ([`http`]), the store step ([`store`]) and its script (`group_page.lua`), side by side.

pub mod http;
pub mod store;
