//! The Lua scripts (from `lua/`), compiled into the binary and invoked by EVALSHA.
//!
//! [`redis::Script::invoke_async`] sends EVALSHA; on a cluster the call is routed by the hash
//! slot of its first key, and every script's keys share one hash tag (see [`super::keys`]).
//! On `NOSCRIPT` (a new node, a failover, `SCRIPT FLUSH`) the connection ([`super::Conn`])
//! re-sends the call as `EVAL` with the source from `eval_for`: same keys, same node, and the
//! node caches the script. (redis-rs would send `SCRIPT LOAD` to *every* node of a cluster
//! instead, so one node being down would fail scripts on all the others.) No warm-up is needed.
//!
//! # One typed call per script
//!
//! Each script's KEYS and ARGV are named once, by a call struct ([`GrabCall`] for [`GRAB`],
//! [`CreatePacketCall`] for [`CREATE_PACKET`], ...: one per script of [`all`]) whose fields are
//! declared in KEYS order, then ARGV order. [`Call::invocation`] turns it into the
//! `EVALSHA` (the store's wrappers), [`Call::texts`] and [`Call::evalsha_words`] into text (the
//! benchmarks' pipelines and `redis-benchmark` command lines); nothing else lists a script's
//! keys or arguments by position.
//!
//! Each script's header (its leading comment block, in `lua/<file>`) lists every key and
//! argument, one per line, in the same order and under the same names:
//!
//! ```text
//! -- KEYS[1] meta: packet meta hash
//! -- ARGV[3] rate_window_ms: the window, ms
//! --         (a continuation line starts with `--` and spaces)
//! -- ARGV[18..17+count] share_amounts: a variable number of values (index `a..b` or `a..`)
//! -- KEYS[m+1] newest_day: one value after a variable part (index an expression)
//! ```
//!
//! A unit test checks every header against its struct: the names and their order, that
//! indices count from 1 up to the first variable part, that a variable part is a slice field
//! (a scalar field is one value), and that the highest literal `KEYS[n]` / `ARGV[n]` the
//! script's body reads is the number of fixed entries before the first variable part.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{LazyLock, Mutex};

use redis::{Cmd, Script, Value};

use super::error::Error;

#[macro_use]
mod call;
#[cfg(test)]
mod headers;

pub use super::coupons::add_codes::CouponAddCodesCall;
pub use super::coupons::add_codes::CouponBatchCall;
pub use super::coupons::close::CouponCloseCall;
pub use super::coupons::create::{CouponCreateCall, CouponCreatePoolCall};
pub use super::coupons::directory::{CouponClaimCall, CouponUnclaimCall};
pub use super::coupons::draw::{CouponDrawEnterCall, CouponDrawRunCall};
pub use super::coupons::grab::CouponGrabCall;
pub use super::coupons::hold::CouponHoldCall;
pub use super::coupons::redeem::CouponRedeemCall;
pub use super::coupons::release::CouponReleaseCall;
pub use super::coupons::settle::CouponSettleCall;
pub use super::coupons::take::CouponTakeCall;
pub use super::history::HistoryPageCall;
pub use super::journal::JournalAckCall;
pub use super::lock::UnlockCall;
pub use super::merchants::{MerchantCreatePacketCall, MerchantDepositCall, MerchantWithdrawCall};
pub use super::order_codes::OrderCodeCall;
pub use super::packets::{
    CancelCall, ClaimCall, ClaimDoneCall, CreatePacketCall, DrawEnterCall, DrawRunCall, DueAddCall,
    GrabCall, PacketViewCall,
};
pub use super::reclaim::SettleCall;
pub use super::reconcile::LedgerBaselineCall;
pub use super::voting::{ArticleGroupsCall, ArticlePostCall, GroupPageCall, VoteCall};
pub use super::wallet::{TransferReleaseCall, WalletCreditCall, WithdrawCall};
pub(crate) use call::script_call;
pub use call::{Call, Sink};

/// A Lua script with its source, so a `NOSCRIPT` can be answered with `EVAL` on the same node.
/// Dereferences to [`redis::Script`] (its hash, `SCRIPT LOAD`); a call of it is built by its
/// call struct ([`Call`]), which orders the keys and arguments.
///
/// The source is the code of `lua/<file>` (after its helpers') with every whole-line comment
/// blanked by `shared/build.rs`: the same lines, so Redis's `user_script:<n>` still counts
/// lines of the files, and no binary carries the scripts' documentation (60 % of their bytes).
pub struct Lua {
    script: Script,
    source: &'static str,
    file: &'static str,
    /// In [`INVOKED`] (set by [`Lua::note_invoked`]).
    invoked: AtomicBool,
}

/// The scripts this process has sent (`Call::invocation`): where a `NOSCRIPT` or an
/// acknowledged call finds a script by its SHA-1.
static INVOKED: Mutex<Vec<&'static Lua>> = Mutex::new(Vec::new());

impl Lua {
    fn new(file: &'static str, source: &'static str) -> Self {
        Lua {
            script: Script::new(source),
            source,
            file,
            invoked: AtomicBool::new(false),
        }
    }

    /// Records that this script is being sent (once per process; afterwards one relaxed
    /// atomic load per call).
    pub(crate) fn note_invoked(&'static self) {
        if !self.invoked.load(Ordering::Relaxed) {
            let mut invoked = INVOKED.lock().unwrap_or_else(|e| e.into_inner());
            if !self.invoked.swap(true, Ordering::Relaxed) {
                invoked.push(self);
            }
        }
    }

    /// The script this process has sent whose SHA-1 is `sha`.
    fn invoked(sha: &str) -> Option<&'static Lua> {
        let invoked = INVOKED.lock().unwrap_or_else(|e| e.into_inner());
        invoked.iter().copied().find(|l| l.get_hash() == sha)
    }

    /// The script's source as sent to Redis (its helpers, then its file; comment lines empty).
    pub fn source(&self) -> &'static str {
        self.source
    }

    /// The script's file name in `lua/`, e.g. `grab.lua`.
    pub fn file(&self) -> &'static str {
        self.file
    }
}

impl std::ops::Deref for Lua {
    type Target = Script;
    fn deref(&self) -> &Script {
        &self.script
    }
}

/// A fresh id for one call of a script that records its outcome under it (16 hex digits): a
/// checkout call (its answer's key, `Keys::call_answer`), a deposit or a withdrawal (its reference's record).
/// The same call sent again (the client re-sends a command whose reply was lost, at any later
/// moment) carries the same id, so it answers as its first run did and writes nothing.
pub(crate) fn call_id() -> String {
    use rand::Rng;
    format!("{:016x}", rand::rng().random::<u64>())
}

/// `lua/<file>` as `shared/build.rs` prepared it (comment lines blanked).
macro_rules! code {
    ($file:literal) => {
        include_str!(concat!(env!("OUT_DIR"), "/lua/", $file))
    };
}

macro_rules! script {
    ($(#[$doc:meta])* $name:ident, $file:literal) => {
        $(#[$doc])*
        pub static $name: LazyLock<Lua> = LazyLock::new(|| Lua::new($file, code!($file)));
    };
    // A script with shared helpers prepended, in order: `rate_limit.lua` (a fixed-window
    // counter), `quota.lua` (rl_check, rl_count), `records.lua` (exact-integer formatting,
    // Redis TIME, idempotency records without TTLs), `history.lua` (a user's history; needs
    // `records.lua`), `journal.lua` (the money journal's entries; needs `records.lua`), `ledger.lua`
    // (a ledger's push and its trimmed cents; needs `records.lua`),
    // `coupon_record.lua` (an issued coupon's record; needs `records.lua`).
    ($(#[$doc:meta])* $name:ident, $file:literal, [$($helper:literal),+]) => {
        $(#[$doc])*
        pub static $name: LazyLock<Lua> = LazyLock::new(|| {
            Lua::new($file, concat!($(code!($helper),)+ code!($file)))
        });
    };
}

/// The scripts whose writes must be on `REDIS_WAIT_REPLICAS` replicas before their answer is
/// given: every script that moves money or records a step of a money movement, and the order
/// codes and the coupon scripts (a lost counter or issue record would hand out a code twice, a
/// lost redemption would let a coupon be redeemed twice, a lost close would leave a campaign
/// its index of ends has let go), a draw's entries and chunks (an entrant answered 202 must
/// be in the draw, a winner's share must not vanish after the answer that gave it). Grabs, views, rate limits, locks and
/// votes are not acknowledged: losing one in a failover loses no money (a lost grab's share
/// returns to its packet, and the grabber's claim answers `no_share`).
pub(crate) const ACKNOWLEDGED: &[&str] = &[
    "create_packet.lua",
    "draw_enter.lua",
    "draw_run.lua",
    "cancel.lua",
    "due_add.lua",
    "claim.lua",
    "claim_done.lua",
    "wallet_credit.lua",
    "settle.lua",
    "withdraw.lua",
    "merchant_deposit.lua",
    "merchant_withdraw.lua",
    "merchant_create_packet.lua",
    "ledger_baseline.lua",
    "order_code.lua",
    "coupon_create.lua",
    "coupon_create_pool.lua",
    "coupon_grab.lua",
    "coupon_hold.lua",
    "coupon_redeem.lua",
    "coupon_release.lua",
    "coupon_take.lua",
    "coupon_settle.lua",
    "coupon_add_codes.lua",
    "coupon_batch.lua",
    "coupon_claim.lua",
    "coupon_unclaim.lua",
    "coupon_close.lua",
    "coupon_draw_enter.lua",
    "coupon_draw_run.lua",
];

/// For an `EVALSHA` of a script in [`ACKNOWLEDGED`] (one this process sent), its first key
/// (the hash slot it runs on).
pub(crate) fn acknowledged_call(cmd: &Cmd) -> Option<Vec<u8>> {
    let mut args = cmd.args_iter().map(|a| match a {
        redis::Arg::Simple(b) => b,
        _ => &b""[..],
    });
    if !args.next()?.eq_ignore_ascii_case(b"EVALSHA") {
        return None;
    }
    let sha = std::str::from_utf8(args.next()?).ok()?;
    let lua = Lua::invoked(sha)?;
    if !ACKNOWLEDGED.contains(&lua.file()) || args.next()? == b"0" {
        return None;
    }
    args.next().map(<[u8]>::to_vec)
}

/// For an `EVALSHA <sha> <numkeys> <keys...> <args...>` of a script this process sent, the same
/// call as `EVAL <source> ...`; `None` for any other command.
pub(crate) fn eval_for(cmd: &Cmd) -> Option<Cmd> {
    let mut args = cmd.args_iter().map(|a| match a {
        redis::Arg::Simple(b) => b,
        _ => &b"0"[..], // a cursor argument: never part of EVALSHA
    });
    if !args.next()?.eq_ignore_ascii_case(b"EVALSHA") {
        return None;
    }
    let sha = std::str::from_utf8(args.next()?).ok()?;
    let lua = Lua::invoked(sha)?;
    let mut eval = redis::cmd("EVAL");
    eval.arg(lua.source());
    for a in args {
        eval.arg(a);
    }
    Some(eval)
}

script!(
    /// `lua/create_packet.lua`: debit the sender and create the packet, atomically.
    CREATE_PACKET, "create_packet.lua", ["records.lua", "quota.lua", "history.lua", "journal.lua", "ledger.lua"]);
script!(
    /// `lua/cancel.lua`: the sender cancels an open packet; its un-grabbed shares are
    /// refunded in the same step.
    CANCEL, "cancel.lua", ["records.lua", "history.lua", "journal.lua", "ledger.lua"]);
script!(
    /// `lua/due_add.lua`: add a packet to the reclaim index (before it is created).
    DUE_ADD, "due_add.lua");
script!(
    /// `lua/grab.lua` (with `lua/rate_limit.lua`): at most one share per user, rate-limited.
    GRAB, "grab.lua", ["rate_limit.lua"]);
script!(
    /// `lua/draw_enter.lua` (with `lua/rate_limit.lua`): enter a user in a draw packet's
    /// draw.
    DRAW_ENTER, "draw_enter.lua", ["rate_limit.lua"]);
script!(
    /// `lua/draw_run.lua`: one chunk of a draw packet's draw (its winners get their shares).
    DRAW_RUN, "draw_run.lua", ["records.lua", "journal.lua"]);
script!(
    /// `lua/claim.lua`: claim step 1, reserve the share on the packet's slot (a coupon
    /// packet's whole claim: the share issued as a coupon).
    CLAIM, "claim.lua", ["records.lua", "journal.lua"]);
script!(
    /// `lua/claim_done.lua`: claim step 3, mark the claim done.
    CLAIM_DONE, "claim_done.lua");
script!(
    /// `lua/wallet_credit.lua`: credit a wallet once per transfer id.
    WALLET_CREDIT, "wallet_credit.lua", ["records.lua", "history.lua", "journal.lua", "ledger.lua"]);
script!(
    /// `lua/settle.lua`: refund an expired packet to its sender, once.
    SETTLE, "settle.lua", ["records.lua", "history.lua", "journal.lua", "ledger.lua"]);
script!(
    /// `lua/transfer_release.lua`: claim step 4, un-pin the claim's credit record once the
    /// claim is done.
    TRANSFER_RELEASE, "transfer_release.lua", ["records.lua"]);
script!(
    /// `lua/withdraw.lua`: pay money out of a wallet once per reference.
    WITHDRAW, "withdraw.lua", ["records.lua", "journal.lua", "ledger.lua"]);
script!(
    /// `lua/merchant_deposit.lua`: pay money into a merchant's budget once per reference.
    MERCHANT_DEPOSIT, "merchant_deposit.lua", ["records.lua", "journal.lua", "ledger.lua"]);
script!(
    /// `lua/merchant_withdraw.lua`: pay money out of a merchant's budget once per reference.
    MERCHANT_WITHDRAW, "merchant_withdraw.lua", ["records.lua", "journal.lua", "ledger.lua"]);
script!(
    /// `lua/merchant_create_packet.lua`: debit a merchant's budget and create its order's
    /// packet, once per order.
    MERCHANT_CREATE_PACKET, "merchant_create_packet.lua", ["records.lua", "journal.lua", "ledger.lua"]);
script!(
    /// `lua/journal_ack.lua`: delete exported journal entries (an emptied journal expires a
    /// minute later).
    JOURNAL_ACK, "journal_ack.lua");
script!(
    /// `lua/ledger_baseline.lua`: the one-time baseline of a ledger trimmed before its
    /// trimmed cents were kept (reconcile-cron).
    LEDGER_BASELINE, "ledger_baseline.lua", ["records.lua", "journal.lua"]);
script!(
    /// `lua/packet_view.lua`: a consistent snapshot of a packet.
    PACKET_VIEW, "packet_view.lua");
script!(
    /// `lua/history_page.lua`: one page of a user's sent or received history (read only).
    HISTORY_PAGE, "history_page.lua");
script!(
    /// `lua/unlock.lua`: compare-and-delete lock release.
    UNLOCK, "unlock.lua");

script!(
    /// `lua/article_post.lua`: post an article of the voting site (hash, vote record with its
    /// expiry, score and time entries), atomically.
    ARTICLE_POST, "article_post.lua", ["quota.lua"]);
script!(
    /// `lua/vote.lua`: rate limit, then one up- or down-vote per user and article while voting
    /// is open (Redis `TIME`); `lua/rate_limit.lua` prepended.
    VOTE, "vote.lua", ["rate_limit.lua"]);
script!(
    /// `lua/article_groups.lua`: the poster adds an article to groups or removes it.
    ARTICLE_GROUPS, "article_groups.lua");
script!(
    /// `lua/group_page.lua`: one page of a group's articles through the cached intersection.
    GROUP_PAGE, "group_page.lua");
script!(
    /// `lua/order_code.lua`: decide the order codes' business day from Redis `TIME` and take
    /// that many positions of the day's sequence, all or none (never wrapping).
    ORDER_CODE, "order_code.lua", ["quota.lua"]);

script!(
    /// `lua/coupon_create.lua`: record a new coupon campaign under its merchant reference.
    COUPON_CREATE, "coupon_create.lua");
script!(
    /// `lua/coupon_create_pool.lua`: write one pool of a new coupon campaign, once.
    COUPON_CREATE_POOL, "coupon_create_pool.lua");
script!(
    /// `lua/coupon_grab.lua` (with `lua/rate_limit.lua`, `lua/journal.lua`): a code of the caller's home pool, at
    /// most `per_user` per user, visits rate-limited.
    COUPON_GRAB, "coupon_grab.lua", ["rate_limit.lua", "records.lua", "journal.lua"]);
script!(
    /// `lua/coupon_hold.lua` (with `lua/coupon_record.lua`): hold an issued coupon for one
    /// order until it lapses.
    COUPON_HOLD, "coupon_hold.lua", ["records.lua", "coupon_record.lua"]);
script!(
    /// `lua/coupon_redeem.lua` (with `lua/coupon_record.lua`): redeem an issued coupon at most
    /// once, committing a hold of the same order.
    COUPON_REDEEM, "coupon_redeem.lua", ["records.lua", "journal.lua", "coupon_record.lua"]);
script!(
    /// `lua/coupon_release.lua` (with `lua/coupon_record.lua`): release an order's hold or
    /// reverse its redemption, once.
    COUPON_RELEASE, "coupon_release.lua", ["records.lua", "journal.lua", "ledger.lua", "coupon_record.lua"]);
script!(
    /// `lua/coupon_take.lua`: one code of another pool for a reservation, at most once.
    COUPON_TAKE, "coupon_take.lua", ["records.lua", "journal.lua"]);
script!(
    /// `lua/coupon_settle.lua`: close a reservation in the user's home pool.
    COUPON_SETTLE, "coupon_settle.lua");
script!(
    /// `lua/coupon_close.lua`: close one pool of an ended campaign, once.
    COUPON_CLOSE, "coupon_close.lua", ["records.lua", "journal.lua"]);
script!(
    /// `lua/coupon_add_codes.lua`: one pool's share of a batch of uploaded codes, once, and
    /// only before the start.
    COUPON_ADD_CODES, "coupon_add_codes.lua");
script!(
    /// `lua/coupon_batch.lua`: a batch's record on pool 0 and the one outcome of its
    /// directory claims.
    COUPON_BATCH, "coupon_batch.lua");
script!(
    /// `lua/coupon_claim.lua`: claim a field for a value, first writer wins (directory claims,
    /// a creation's claims outcome).
    COUPON_CLAIM, "coupon_claim.lua");
script!(
    /// `lua/coupon_unclaim.lua`: release a code's directory claim if it is the owner's.
    COUPON_UNCLAIM, "coupon_unclaim.lua");
script!(
    /// `lua/coupon_draw_enter.lua` (with `lua/rate_limit.lua`): a draw campaign's grab on
    /// pool 0: enter the caller until `draw_at`, then tell a winner.
    COUPON_DRAW_ENTER, "coupon_draw_enter.lua", ["rate_limit.lua"]);
script!(
    /// `lua/coupon_draw_run.lua`: a draw campaign's draw, once (entrants, winners, threshold).
    COUPON_DRAW_RUN, "coupon_draw_run.lua", ["records.lua", "journal.lua"]);

/// Every script with its file name, e.g. for `SCRIPT LOAD` in benchmarks.
pub fn all() -> impl Iterator<Item = (&'static str, &'static Script)> {
    all_lua().map(|(name, lua)| (name, &lua.script))
}

/// Every script's file name and its source as sent (helpers first, comment lines blanked):
/// what [`super::acl`] reads the commands of a Redis user's scripts from.
pub fn all_sources() -> impl Iterator<Item = (&'static str, &'static str)> {
    all_lua().map(|(name, lua)| (name, lua.source()))
}

/// Every script (its file name is its own: [`Lua::file`]); a test checks each has a call
/// struct and a header, and that `lua/` holds no other entry-point script.
fn all_lua() -> impl Iterator<Item = (&'static str, &'static Lua)> {
    static ALL: &[&LazyLock<Lua>] = &[
        &CREATE_PACKET,
        &CANCEL,
        &DUE_ADD,
        &GRAB,
        &DRAW_ENTER,
        &DRAW_RUN,
        &CLAIM,
        &CLAIM_DONE,
        &WALLET_CREDIT,
        &SETTLE,
        &TRANSFER_RELEASE,
        &WITHDRAW,
        &MERCHANT_DEPOSIT,
        &MERCHANT_CREATE_PACKET,
        &MERCHANT_WITHDRAW,
        &JOURNAL_ACK,
        &LEDGER_BASELINE,
        &PACKET_VIEW,
        &HISTORY_PAGE,
        &UNLOCK,
        &ARTICLE_POST,
        &VOTE,
        &ARTICLE_GROUPS,
        &GROUP_PAGE,
        &ORDER_CODE,
        &COUPON_CREATE,
        &COUPON_CREATE_POOL,
        &COUPON_GRAB,
        &COUPON_HOLD,
        &COUPON_REDEEM,
        &COUPON_RELEASE,
        &COUPON_TAKE,
        &COUPON_SETTLE,
        &COUPON_ADD_CODES,
        &COUPON_BATCH,
        &COUPON_CLAIM,
        &COUPON_UNCLAIM,
        &COUPON_CLOSE,
        &COUPON_DRAW_ENTER,
        &COUPON_DRAW_RUN,
    ];
    ALL.iter().map(|lua| (lua.file(), &***lua))
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
pub(crate) fn int(script: &str, item: Option<&String>) -> Result<i64, Error> {
    item.and_then(|s| s.parse().ok())
        .ok_or_else(|| Error::bad_reply(script, format!("expected an integer, got {item:?}")))
}
