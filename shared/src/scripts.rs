//! The Lua scripts (from `lua/`), compiled into the binary and invoked by EVALSHA.
//!
//! [`redis::Script::invoke_async`] sends EVALSHA and, on `NOSCRIPT` (a new node, a
//! failover, `SCRIPT FLUSH`), loads the script and retries, so no warm-up is needed. On a
//! cluster the call is routed by the hash slot of its first key; every script's keys share one
//! hash tag (see [`crate::keys`]).

use std::sync::LazyLock;

use redis::{Script, Value};

use crate::error::Error;

macro_rules! script {
    ($(#[$doc:meta])* $name:ident, $file:literal) => {
        $(#[$doc])*
        pub static $name: LazyLock<Script> =
            LazyLock::new(|| Script::new(include_str!(concat!("../../lua/", $file))));
    };
}

script!(
    /// `lua/create_packet.lua`: debit the sender and create the packet, atomically.
    CREATE_PACKET, "create_packet.lua");
script!(
    /// `lua/due_add.lua`: add a packet to the reclaim index (before it is created).
    DUE_ADD, "due_add.lua");
script!(
    /// `lua/grab.lua`: rate limit, then at most one share per user.
    GRAB, "grab.lua");
script!(
    /// `lua/claim.lua`: claim step 1, reserve the share on the packet's slot.
    CLAIM, "claim.lua");
script!(
    /// `lua/claim_done.lua`: claim step 3, mark the claim done.
    CLAIM_DONE, "claim_done.lua");
script!(
    /// `lua/wallet_credit.lua`: credit a wallet once per transfer id.
    WALLET_CREDIT, "wallet_credit.lua");
script!(
    /// `lua/settle.lua`: refund an expired packet to its sender, once.
    SETTLE, "settle.lua");
script!(
    /// `lua/packet_view.lua`: a consistent snapshot of a packet.
    PACKET_VIEW, "packet_view.lua");
script!(
    /// `lua/unlock.lua`: compare-and-delete lock release.
    UNLOCK, "unlock.lua");

script!(
    /// `lua/article_post.lua`: post an article of the voting site (hash, vote record with its
    /// expiry, score and time entries), atomically.
    ARTICLE_POST, "article_post.lua");
script!(
    /// `lua/vote.lua`: rate limit, then one up- or down-vote per user and article while voting
    /// is open (Redis `TIME`).
    VOTE, "vote.lua");
script!(
    /// `lua/article_groups.lua`: the poster adds an article to groups or removes it.
    ARTICLE_GROUPS, "article_groups.lua");
script!(
    /// `lua/group_page.lua`: one page of a group's articles through the cached intersection.
    GROUP_PAGE, "group_page.lua");
script!(
    /// `lua/order_code.lua`: decide the order codes' business day from Redis `TIME` and take
    /// that many positions of the day's sequence, all or none (never wrapping).
    ORDER_CODE, "order_code.lua");

/// Every script with its file name, e.g. for `SCRIPT LOAD` in benchmarks.
pub fn all() -> [(&'static str, &'static Script); 14] {
    [
        ("create_packet.lua", &CREATE_PACKET),
        ("due_add.lua", &DUE_ADD),
        ("grab.lua", &GRAB),
        ("claim.lua", &CLAIM),
        ("claim_done.lua", &CLAIM_DONE),
        ("wallet_credit.lua", &WALLET_CREDIT),
        ("settle.lua", &SETTLE),
        ("packet_view.lua", &PACKET_VIEW),
        ("unlock.lua", &UNLOCK),
        ("article_post.lua", &ARTICLE_POST),
        ("vote.lua", &VOTE),
        ("article_groups.lua", &ARTICLE_GROUPS),
        ("group_page.lua", &GROUP_PAGE),
        ("order_code.lua", &ORDER_CODE),
    ]
}

/// A script's array reply as text items (bulk strings, simple strings and integers).
///
/// # Errors
/// [`Error::Internal`] when the reply is not a flat array of such items.
pub fn texts(script: &str, value: Value) -> Result<Vec<String>, Error> {
    match value {
        Value::Array(items) => items.into_iter().map(|v| text(script, v)).collect(),
        other => Err(Error::bad_reply(script, format!("{other:?}"))),
    }
}

/// One reply item as text.
///
/// # Errors
/// [`Error::Internal`] for nil, nested arrays and other non-text items.
pub fn text(script: &str, value: Value) -> Result<String, Error> {
    match value {
        Value::BulkString(b) => String::from_utf8(b).map_err(|e| Error::bad_reply(script, e)),
        Value::SimpleString(s) => Ok(s),
        Value::Int(i) => Ok(i.to_string()),
        Value::Okay => Ok("OK".into()),
        other => Err(Error::bad_reply(script, format!("{other:?}"))),
    }
}

/// Parses an integer item of a reply.
///
/// # Errors
/// [`Error::Internal`] when `item` is missing or not an integer.
pub fn int(script: &str, item: Option<&String>) -> Result<i64, Error> {
    item.and_then(|s| s.parse().ok())
        .ok_or_else(|| Error::bad_reply(script, format!("expected an integer, got {item:?}")))
}
