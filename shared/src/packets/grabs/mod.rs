//! `GET /packets/{id}/grabs`: a later page of a packet's grabs: the handler ([`http`]); its
//! store step is the view's ([`crate::packets::view::store`]).

pub mod http;
