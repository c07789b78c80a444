//! reconcile-cron: every wallet and every merchant's budget checked against its ledger and the
//! money journal, a batch per run, the walk resumed where the last run stopped.
//!
//! Accounts have no index (a wallet is its hash, `<prefix>:{t}:wallet:<user>`, a merchant's
//! budget `<prefix>:{t}:merchant:<merchant>`), so the walk is a `SCAN` of each master
//! ([`crate::store::Conn::scan_step`]) for hashes of those shapes, never on a request path. Where each master's scan stands is kept in Redis, so runs (and sandboxes) share it:
//!
//! | key | type | contents |
//! | --- | --- | --- |
//! | `<prefix>:{reconcile}:cursor` | hash | master (`standalone`, or `host:port` of a cluster master) -> its `SCAN` cursor, or `done` once its scan is over; deleted when every master of the cluster is `done` (a pass is over: the next run starts another); no TTL (it guards no money; losing it only restarts the pass) |
//!
//! A cluster's masters are those `CLUSTER SLOTS` names at each run: a master new since the
//! pass began (a failover, a scale-out) is scanned from its start, so no account of it is
//! missed; an account may be checked twice in a pass (`SCAN` may return a key twice), which
//! changes nothing, as the job writes only its cursor (and once per ledger trimmed before its
//! trimmed cents were kept, that ledger's journaled baseline: [`baseline`]).
//!
//! Each account is read in one atomic step on its hash tag (`MULTI`: its hash, its ledger,
//! the newest [`JOURNAL_WINDOW`] entries of its tag's journal), then checked by
//! [`crate::domain::reconcile::reconcile`] (the rules are there).

use crate::store::scripts::LedgerBaselineCall;
use std::collections::HashMap;
use std::time::Instant;

use futures::stream::{self, StreamExt, TryStreamExt};
use redis::Value;
use serde::Serialize;

use super::error::Error;
use super::journal::parse_range;
use super::keys::Keys;
use super::scan::Master;
use super::scripts::{call_id, text, Call};
use super::Store;
use crate::domain::reconcile::{reconcile, Account, LedgerOwner, Mismatch};
use crate::wallet::rules::LEDGER_CAP;

/// Keys one `SCAN` step asks each master to look at (`COUNT`), at most; fewer when fewer
/// accounts are left to the run's budget.
pub const SCAN_COUNT: usize = 500;

/// Accounts of one `SCAN` step checked at once (each one round trip on its own slot).
pub const CONCURRENCY: usize = 32;

/// The newest entries of an account's journal read with it (`XREVRANGE ... COUNT`): the
/// entries ledger-export has not published yet, which it deletes within a minute or two.
pub const JOURNAL_WINDOW: usize = 1_000;

/// What one reconcile run did. Logged and returned by the reconcile-cron function.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ReconcileSummary {
    /// Accounts checked (wallets and merchants' budgets).
    pub checked: u64,
    /// Accounts with at least one [`Mismatch`].
    pub mismatched: u64,
    /// `SCAN` steps taken.
    pub scan_steps: u64,
    /// Whether this run ended a pass over every account (the next run starts another).
    pub pass_completed: bool,
}

/// One account that did not reconcile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreconciled {
    /// A wallet or a merchant's budget.
    pub holder: LedgerOwner,
    /// The wallet's user or the merchant id.
    pub id: String,
    /// What was wrong.
    pub mismatches: Vec<Mismatch>,
}

/// The hash that keeps each master's place in the walk.
fn cursor_key(prefix: &str) -> String {
    format!("{prefix}:{{reconcile}}:cursor")
}

/// A master's field in [`cursor_key`].
fn label(master: &Master) -> String {
    match master {
        None => "standalone".to_string(),
        Some((host, port)) => format!("{host}:{port}"),
    }
}

/// The account whose hash `key` is (`None`: another key the pattern matched, such as a
/// wallet's `:idem` or `:history` hash).
fn account_of(keys: &Keys, prefix: &str, key: &str) -> Option<(LedgerOwner, String)> {
    let rest = key.strip_prefix(prefix)?.strip_prefix(":{")?;
    let (_, rest) = rest.split_once("}:")?;
    let (holder, encoded) = if let Some(e) = rest.strip_prefix("wallet:") {
        (LedgerOwner::Wallet, e)
    } else {
        (LedgerOwner::Merchant, rest.strip_prefix("merchant:")?)
    };
    let id = percent_encoding::percent_decode_str(encoded)
        .decode_utf8()
        .ok()?
        .into_owned();
    let own = match holder {
        LedgerOwner::Wallet => keys.wallet(&id).wallet,
        LedgerOwner::Merchant => keys.merchant(&id).merchant,
    };
    (own == key).then_some((holder, id))
}

/// Checks the account `id` of `holder`: its hash, ledger and journal read in one `MULTI` on
/// its hash tag, then [`reconcile`] (deposit and withdrawal references deduplicated for
/// `HONGBAO_DEPOSIT_DEDUP_SECS`).
///
/// # Errors
/// [`Error::Unavailable`] when its node cannot be reached; [`Error::Internal`] for a reply of
/// the wrong shape.
pub async fn check_account(
    store: &Store,
    holder: LedgerOwner,
    id: &str,
) -> Result<Vec<Mismatch>, Error> {
    let keys = Keys::new(&store.config().key_prefix);
    let (hash, ledger, journal) = match holder {
        LedgerOwner::Wallet => {
            let w = keys.wallet(id);
            (w.wallet, w.ledger, w.journal)
        }
        LedgerOwner::Merchant => {
            let m = keys.merchant(id);
            (m.merchant, m.ledger, m.journal)
        }
    };
    let mut conn = store.conn().await?;
    let (fields, items, entries): (HashMap<String, String>, Vec<String>, Value) = redis::pipe()
        .atomic()
        .cmd("HGETALL")
        .arg(&hash)
        .cmd("LRANGE")
        .arg(&ledger)
        .arg(0)
        .arg(LEDGER_CAP as isize - 1)
        .cmd("XREVRANGE")
        .arg(&journal)
        .arg("+")
        .arg("-")
        .arg("COUNT")
        .arg(JOURNAL_WINDOW)
        .query_async(&mut conn)
        .await?;
    let account = Account {
        holder,
        id,
        fields: &fields,
        ledger: &items,
    };
    let dedup_ms = (store.config().wallet.deposit_dedup_secs * 1000) as i64;
    Ok(reconcile(
        &account,
        &parse_range(&journal, entries)?,
        dedup_ms,
    ))
}

/// Whether an account's only mismatch is a ledger's sum with no trimmed cents: a ledger
/// trimmed before `ledger_trimmed_cents` existed may be one (its baseline decides).
fn only_untrimmed_sum(mismatches: &[Mismatch]) -> bool {
    matches!(
        mismatches,
        [Mismatch::LedgerSum {
            trimmed_cents: 0,
            ..
        }]
    )
}

/// Gives the ledger of account `id` of `holder` its one-time baseline under call id `call`
/// (`lua/ledger_baseline.lua`): when the ledger is at its cap ([`LEDGER_CAP`]) and its hash
/// has no `ledger_trimmed_cents` (it was trimmed before the field existed), the field is set to
/// the balance less the ledger's items and the baseline journaled (`ledger_baseline` or
/// `merchant_ledger_baseline`, with those cents), and logged; later drift is reported as
/// any other. Returns the cents taken as trimmed, `None` when no baseline was needed.
///
/// # Errors
/// [`Error::Unavailable`] when its node cannot be reached; [`Error::Internal`] for a reply of
/// the wrong shape or a ledger item without its cents.
pub async fn baseline(
    store: &Store,
    holder: LedgerOwner,
    id: &str,
    call: &str,
) -> Result<Option<i64>, Error> {
    const NAME: &str = "ledger_baseline";
    let keys = Keys::new(&store.config().key_prefix);
    let (hash, ledger, journal, kind) = match holder {
        LedgerOwner::Wallet => {
            let w = keys.wallet(id);
            (w.wallet, w.ledger, w.journal, "ledger_baseline")
        }
        LedgerOwner::Merchant => {
            let m = keys.merchant(id);
            (m.merchant, m.ledger, m.journal, "merchant_ledger_baseline")
        }
    };
    let mut conn = store.conn().await?;
    let reply: Value = LedgerBaselineCall {
        holder: &hash,
        ledger: &ledger,
        journal: &journal,
        call_answer: &Keys::call_answer(&hash, call),
        holder_id: id,
        kind,
        ledger_cap: LEDGER_CAP,
        call_keep_ms: crate::domain::resend::CALL_KEEP_MS,
    }
    .invocation()
    .invoke_async(&mut conn)
    .await?;
    let reply = text(NAME, reply)?;
    match reply.split_once(':') {
        None if reply == "not_needed" => Ok(None),
        Some(("baselined", cents)) => {
            let cents: i64 = cents.parse().map_err(|_| Error::bad_reply(NAME, &reply))?;
            tracing::warn!(
                holder = holder.as_str(),
                %id,
                ledger_trimmed_cents = cents,
                "ledger trimmed before its trimmed cents were kept: baselined (journaled)"
            );
            Ok(Some(cents))
        }
        _ => Err(Error::bad_reply(NAME, &reply)),
    }
}

/// Walks on from where the last run stopped: `SCAN` steps over each master in turn, checking
/// every account each step finds, until about `max_accounts` are checked (a step's accounts are
/// all checked: `SCAN` may return more keys than it was asked for), `stop_at` passes, or every
/// master's scan is over (the pass is over: the cursor is deleted). Each step's cursor is
/// saved before the next, so a run that fails or times out loses at most one step's work.
/// The accounts that did not reconcile are returned with the summary (the caller logs and
/// counts them).
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached; [`Error::Internal`] for a reply of the
/// wrong shape. An account that cannot be read ends the run: the next run checks it again.
pub async fn run_until(
    store: &Store,
    stop_at: Instant,
    max_accounts: u64,
) -> Result<(ReconcileSummary, Vec<Unreconciled>), Error> {
    let prefix = store.config().key_prefix.clone();
    let keys = Keys::new(&prefix);
    let cursors = cursor_key(&prefix);
    // `wallet:` and `merchant:` (and a few shapes neither, which account_of drops).
    let pattern = format!("{prefix}:{{*}}:[wm][ae][lr][lc][eh]*");
    let mut conn = store.conn().await?;
    let masters = conn.masters().await?;
    let saved: std::collections::HashMap<String, String> = redis::cmd("HGETALL")
        .arg(&cursors)
        .query_async(&mut conn)
        .await?;
    let mut summary = ReconcileSummary::default();
    let mut found = Vec::new();
    let mut done = 0;
    for master in &masters {
        let field = label(master);
        let mut cursor = match saved.get(&field).map(String::as_str) {
            Some("done") => {
                done += 1;
                continue;
            }
            Some(c) => c.parse::<u64>().unwrap_or(0),
            None => 0,
        };
        while summary.checked < max_accounts && Instant::now() < stop_at {
            let count = SCAN_COUNT.min((max_accounts - summary.checked) as usize);
            let (next, batch) = conn
                .scan_step(master, cursor, &pattern, "hash", count)
                .await?;
            summary.scan_steps += 1;
            let accounts = batch
                .iter()
                .filter_map(|key| account_of(&keys, &prefix, key));
            let checked: Vec<(LedgerOwner, String, Vec<Mismatch>)> = stream::iter(accounts)
                .map(|(holder, id)| async move {
                    let mut mismatches = check_account(store, holder, &id).await?;
                    if only_untrimmed_sum(&mismatches)
                        && baseline(store, holder, &id, &call_id()).await?.is_some()
                    {
                        mismatches = check_account(store, holder, &id).await?;
                    }
                    Ok::<_, Error>((holder, id, mismatches))
                })
                .buffer_unordered(CONCURRENCY)
                .try_collect()
                .await?;
            for (holder, id, mismatches) in checked {
                summary.checked += 1;
                if !mismatches.is_empty() {
                    summary.mismatched += 1;
                    found.push(Unreconciled {
                        holder,
                        id,
                        mismatches,
                    });
                }
            }
            cursor = next;
            let place = if next == 0 {
                "done".to_string()
            } else {
                next.to_string()
            };
            let () = redis::cmd("HSET")
                .arg(&cursors)
                .arg(&field)
                .arg(place)
                .query_async(&mut conn)
                .await?;
            if next == 0 {
                done += 1;
                break;
            }
        }
        if summary.checked >= max_accounts || Instant::now() >= stop_at {
            break;
        }
    }
    if done == masters.len() {
        let () = redis::cmd("DEL")
            .arg(&cursors)
            .query_async(&mut conn)
            .await?;
        summary.pass_completed = true;
    }
    Ok((summary, found))
}
