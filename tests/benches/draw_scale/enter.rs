//! The entries: `n` distinct users entered through `lua/draw_enter.lua` (`DrawEnterCall`, each
//! with its ticket `draws::rules::ticket(seed, user)`), pipelined with many calls in flight,
//! and the server's time per entry (`INFO commandstats`) over windows of consecutive entries
//! ending at growing entrant counts.

use std::time::Instant;

use futures::StreamExt;
use hongbao::draws::rules as draws;
use hongbao::store::keys::PacketKeys;
use hongbao::store::scripts::{Call, DrawEnterCall, GrabCall, DRAW_ENTER, GRAB};
use hongbao::Config;
use redis::aio::MultiplexedConnection;
use redis::Value;

use super::{info, Server};
use crate::support::info_field;

/// Entries per pipeline.
const PIPELINE: usize = 500;
/// Pipelines in flight at once on the one multiplexed connection.
const IN_FLIGHT: usize = 8;
/// Entries per measured window.
pub const WINDOW: usize = 10_000;

/// The user id of entrant `i`: shaped as a Cognito `sub` (a UUID, 36 characters), as the
/// API's callers are, so the bytes per entrant are a deployment's.
pub fn user(i: usize) -> String {
    let h = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    format!(
        "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
        h >> 32,
        (h >> 16) & 0xffff,
        h & 0xfff,
        (h >> 52) & 0xfff,
        i
    )
}

/// The server's cost of one window of entries.
#[derive(Clone, Copy, Debug)]
pub struct Window {
    /// Entrants in the set once the window's entries are in.
    pub entrants: usize,
    /// `usec_per_call` of `EVALSHA` (the whole `draw_enter.lua` call).
    pub evalsha_usec: f64,
    /// `usec_per_call` of the `ZADD` inside it.
    pub zadd_usec: f64,
}

/// Everything the entries measured.
pub struct Entries {
    pub windows: Vec<Window>,
    /// `usec_per_call` of `grab.lua` answering the seed (an entry's first call), over
    /// [`WINDOW`] users once everyone entered.
    pub seed_usec: f64,
    /// Wall time of all `n` entries, seconds (this process's pipelines: a load figure of the
    /// bench, not a capacity).
    pub wall_secs: f64,
}

/// The packet's keys and limits every entry carries.
pub struct Target<'a> {
    pub pk: &'a PacketKeys,
    pub rate_of: &'a dyn Fn(&str) -> String,
    pub cfg: &'a Config,
    pub seed: &'a str,
}

/// Enters users `from..to`, [`PIPELINE`] per pipeline, [`IN_FLIGHT`] pipelines at once; panics
/// unless every reply is `entered:<draw_at>`.
pub async fn enter_range(conn: &MultiplexedConnection, t: &Target<'_>, from: usize, to: usize) {
    let batches = (from..to).step_by(PIPELINE).map(|start| {
        let end = (start + PIPELINE).min(to);
        let mut pipe = redis::pipe();
        for i in start..end {
            let user = user(i);
            let ticket = draws::ticket(t.seed, &user).expect("the packet's seed is 64 hex");
            let rate = (t.rate_of)(&user);
            let (keys, args) = DrawEnterCall {
                meta: &t.pk.meta,
                tickets: &t.pk.tickets,
                rate: &rate,
                user_id: &user,
                ticket: &ticket,
                rate_limit: t.cfg.packets.grab_rate_limit,
                rate_window_ms: t.cfg.packets.grab_rate_window_ms,
            }
            .texts();
            let cmd = pipe
                .cmd("EVALSHA")
                .arg(DRAW_ENTER.get_hash())
                .arg(keys.len());
            cmd.arg(keys).arg(args);
        }
        let mut conn = conn.clone();
        async move {
            let replies: Vec<Value> = pipe.query_async(&mut conn).await.expect("draw_enter");
            replies
        }
    });
    let mut replies = futures::stream::iter(batches).buffer_unordered(IN_FLIGHT);
    while let Some(batch) = replies.next().await {
        for r in batch {
            let text = match &r {
                Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
                other => format!("{other:?}"),
            };
            assert!(
                text.starts_with("entered:"),
                "an entry answered {text:?}: the entry window closed before {to} entries were \
                 in (set BENCH_ENTRY_SECS higher)"
            );
        }
    }
}

/// Enters users `0..n`; before each checkpoint in `checkpoints` (entrant counts, ascending,
/// each ≥ [`WINDOW`]) resets the statistics and measures the last [`WINDOW`] entries.
pub async fn enter_all(s: &mut Server, t: &Target<'_>, n: usize, checkpoints: &[usize]) -> Entries {
    let started = Instant::now();
    let mut done = 0;
    let mut windows = Vec::new();
    for &c in checkpoints.iter().filter(|&&c| c <= n && c >= WINDOW) {
        enter_range(&s.conn, t, done, c - WINDOW).await;
        s.cmd(&["CONFIG", "RESETSTAT"]).await;
        enter_range(&s.conn, t, c - WINDOW, c).await;
        let stats = info(s, "commandstats").await;
        let calls = info_field(&stats, "cmdstat_evalsha", Some("calls")) as usize;
        assert_eq!(calls, WINDOW, "EVALSHA calls in the window ending at {c}");
        windows.push(Window {
            entrants: c,
            evalsha_usec: info_field(&stats, "cmdstat_evalsha", Some("usec_per_call")),
            zadd_usec: info_field(&stats, "cmdstat_zadd", Some("usec_per_call")),
        });
        eprintln!(
            "entered {c} of {n} ({:.0} s)",
            started.elapsed().as_secs_f64()
        );
        done = c;
    }
    enter_range(&s.conn, t, done, n).await;
    let wall_secs = started.elapsed().as_secs_f64();
    Entries {
        windows,
        seed_usec: seed_usec(s, t, n).await,
        wall_secs,
    }
}

/// The first call of an entry: `grab.lua` for [`WINDOW`] users who have not entered
/// (users `n..`), each answered `draw_seed:<seed>:<draw_at>`; answers its `usec_per_call`.
async fn seed_usec(s: &mut Server, t: &Target<'_>, n: usize) -> f64 {
    s.cmd(&["SCRIPT", "LOAD", GRAB.source()]).await;
    s.cmd(&["CONFIG", "RESETSTAT"]).await;
    for start in (n..n + WINDOW).step_by(PIPELINE) {
        let mut pipe = redis::pipe();
        for i in start..start + PIPELINE {
            let user = user(i);
            let rate = (t.rate_of)(&user);
            let (keys, args) = GrabCall {
                meta: &t.pk.meta,
                shares: &t.pk.shares,
                grabs: &t.pk.grabs,
                rate: &rate,
                recipients: &t.pk.recipients,
                wrong_guesses: &t.pk.wrong_guesses,
                guesses: &t.pk.wrong_guesses,
                order: &t.pk.order,
                user_id: &user,
                rate_limit: t.cfg.packets.grab_rate_limit,
                rate_window_ms: t.cfg.packets.grab_rate_window_ms,
                password: "",
                call_id: "0badcafe",
                guess_budget: t.cfg.packets.guess_budget,
                guess_window_ms: t.cfg.packets.guess_window_ms,
                guesses_per_user: 0,
            }
            .texts();
            pipe.cmd("EVALSHA")
                .arg(GRAB.get_hash())
                .arg(keys.len())
                .arg(keys)
                .arg(args);
        }
        let replies: Vec<String> = pipe.query_async(&mut s.conn.clone()).await.expect("grab");
        let want = format!("draw_seed:{}:", t.seed);
        assert!(
            replies.iter().all(|r| r.starts_with(&want)),
            "a grab in the entry window answered {:?}",
            replies.first()
        );
    }
    let stats = info(s, "commandstats").await;
    assert_eq!(
        info_field(&stats, "cmdstat_evalsha", Some("calls")) as usize,
        WINDOW,
        "grab.lua calls"
    );
    info_field(&stats, "cmdstat_evalsha", Some("usec_per_call"))
}
