//! The four scenarios' storms as recorded through the proxy: each sets up its data and
//! sandboxes, switches the proxy to the storm, runs every user's presses, and says what the
//! server must hold after it.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use hongbao::packets::{self, GrabOutcome, Share};
use hongbao::store::keys::Keys;
use hongbao::store::scripts;
use hongbao::voting::{self, Direction, NewArticle, PostOutcome, SiteKeys, VoteOutcome};
use hongbao::wallet;
use hongbao::{Error, Store};
use redis::aio::MultiplexedConnection;
use redis::Script;
use serde_json::json;

use crate::proxy::{Phase, Proxy};
use crate::support::{
    bench_config, ch1_article, create_packet, lucky_packet, node_conn, CH1_KEYS, CH1_VOTE,
    SEED_GRAB,
};
use crate::{grabber, repeats, voter, Settings, CENTS_PER_SHARE, SEED_KEYS, SHARES};

/// How a seed grab's winning reply begins: the share's JSON record.
const JSON_OBJECT: char = '{';

/// A check of the server's state after a storm: `command` answers `expect`.
#[derive(Debug, Clone)]
pub struct Check {
    /// What it checks.
    pub what: &'static str,
    /// The command, as its words.
    pub command: Vec<String>,
    /// The expected integer answer.
    pub expect: i64,
}

impl Check {
    /// A check that `words` answers `expect`.
    pub fn new(what: &'static str, words: &[&str], expect: u64) -> Check {
        Check {
            what,
            command: words.iter().map(|w| w.to_string()).collect(),
            expect: expect as i64,
        }
    }
}

/// Runs every check on `conn`; returns the failed ones.
pub async fn verify(conn: &mut MultiplexedConnection, checks: &[Check]) -> Vec<String> {
    let mut problems = Vec::new();
    for c in checks {
        let got: Result<Option<i64>, _> = redis::cmd(&c.command[0])
            .arg(&c.command[1..])
            .query_async(conn)
            .await;
        match got {
            Ok(Some(n)) if n == c.expect => {}
            other => problems.push(format!(
                "{}: {} answered {other:?}, not {}",
                c.what,
                c.command.join(" "),
                c.expect
            )),
        }
    }
    problems
}

/// Outcome counts by path, in first-seen order.
#[derive(Debug, Default, Clone)]
pub struct Mix(pub Vec<(&'static str, u64)>);

impl Mix {
    /// Counts one call that took `path`.
    pub fn add(&mut self, path: &'static str) {
        match self.0.iter_mut().find(|(p, _)| *p == path) {
            Some((_, n)) => *n += 1,
            None => self.0.push((path, 1)),
        }
    }

    /// All calls.
    pub fn total(&self) -> u64 {
        self.0.iter().map(|(_, n)| n).sum()
    }

    /// `path n, path n, ...`.
    pub fn text(&self) -> String {
        self.0
            .iter()
            .map(|(p, n)| format!("{p} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// What one user's presses (one or two calls in one sandbox) got.
#[derive(Debug, Default)]
pub struct UserOut {
    /// The path of each call, in order.
    pub paths: Vec<&'static str>,
    /// Calls that handed this user a share (or counted a new vote).
    pub wins: u32,
    /// How a repeat broke the rules, if it did.
    pub bad: Option<String>,
    /// The first error a call returned.
    pub error: Option<String>,
}

/// What a scenario's storm did, as its callers saw it, and what the server must hold after it.
pub struct StormOut {
    /// Calls of the scenario's function.
    pub requests: u64,
    /// Calls per path.
    pub mix: Mix,
    /// Checks of the callers' answers that did not hold.
    pub problems: Vec<String>,
    /// Checks of the server's state, run on the recorded and on every replayed server.
    pub checks: Vec<Check>,
    /// Wall time of the storm (through the proxy), seconds.
    pub secs: f64,
}

impl StormOut {
    /// Sums `outs` (one per user) and checks that `expected_wins` users won once each, no
    /// repeat broke the rules and no call failed.
    pub fn from_users(
        outs: Vec<UserOut>,
        expected_wins: u64,
        checks: Vec<Check>,
        secs: f64,
    ) -> StormOut {
        let mut mix = Mix::default();
        let mut problems = Vec::new();
        let (mut winners, mut wins, mut bad, mut errors) = (0u64, 0u64, 0u64, 0u64);
        let (mut first_bad, mut first_error) = (None, None);
        for o in &outs {
            o.paths.iter().for_each(|p| mix.add(p));
            wins += u64::from(o.wins);
            winners += u64::from(o.wins > 0);
            if let Some(b) = &o.bad {
                bad += 1;
                first_bad.get_or_insert_with(|| b.clone());
            }
            if let Some(e) = &o.error {
                errors += 1;
                first_error.get_or_insert_with(|| e.clone());
            }
        }
        if wins != expected_wins || winners != expected_wins {
            problems.push(format!(
                "{wins} wins by {winners} distinct users, not {expected_wins}"
            ));
        }
        if let Some(b) = first_bad {
            problems.push(format!("{bad} users' repeats broke the rules, e.g. {b}"));
        }
        if let Some(e) = first_error {
            problems.push(format!("{errors} users got an error, e.g. {e}"));
        }
        StormOut {
            requests: mix.total(),
            mix,
            problems,
            checks,
            secs,
        }
    }
}

/// Runs `users` users' jobs on `sandboxes`: one task per sandbox, each taking the next user
/// from a shared counter and running its job to the end before taking another (one request
/// at a time per sandbox); returns every user's result.
pub async fn run_sandboxes<H, F, Fut>(sandboxes: &[H], users: u64, job: F) -> Vec<UserOut>
where
    H: Clone + Send + 'static,
    F: Fn(H, u64) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = UserOut> + Send,
{
    let next = Arc::new(AtomicU64::new(0));
    let handles: Vec<_> = sandboxes
        .iter()
        .cloned()
        .map(|sandbox| {
            let (next, job) = (next.clone(), job.clone());
            tokio::spawn(async move {
                let mut outs = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= users {
                        return outs;
                    }
                    outs.push(job(sandbox.clone(), i).await);
                }
            })
        })
        .collect();
    let mut outs = Vec::with_capacity(users as usize);
    for h in handles {
        outs.extend(h.await.expect("sandbox task"));
    }
    outs
}

/// The storm: switches the proxy to [`Phase::Storm`], runs `users` users' jobs on `sandboxes`
/// (as [`run_sandboxes`]) and closes the sandboxes; returns every user's result and the
/// storm's wall time, seconds.
async fn run_storm<H, F, Fut>(
    proxy: &Proxy,
    sandboxes: Vec<H>,
    users: u64,
    job: F,
) -> (Vec<UserOut>, f64)
where
    H: Clone + Send + 'static,
    F: Fn(H, u64) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = UserOut> + Send,
{
    proxy.set_phase(Phase::Storm);
    let started = Instant::now();
    let outs = run_sandboxes(&sandboxes, users, job).await;
    let secs = started.elapsed().as_secs_f64();
    drop(sandboxes);
    (outs, secs)
}

/// `s.sandboxes` hongbao sandboxes on the proxy: each its own [`Store`], connected (warm).
pub async fn sandbox_stores(proxy: &Proxy, s: Settings) -> Vec<Arc<Store>> {
    let mut stores = Vec::with_capacity(s.sandboxes);
    for _ in 0..s.sandboxes {
        let store = Arc::new(Store::new(bench_config(proxy.url(), false)));
        store.conn().await.expect("sandbox connect");
        stores.push(store);
    }
    stores
}

/// `s.sandboxes` baseline sandboxes on the proxy: one redis-rs connection each.
pub async fn sandbox_conns(proxy: &Proxy, s: Settings) -> Vec<MultiplexedConnection> {
    let mut conns = Vec::with_capacity(s.sandboxes);
    for _ in 0..s.sandboxes {
        conns.push(node_conn(&proxy.url()).await);
    }
    conns
}

/// `SCRIPT LOAD`s every hongbao script through the proxy, so that no storm call meets
/// `NOSCRIPT` (warm sandboxes on a warm server).
pub async fn load_scripts(proxy: &Proxy) {
    let mut conn = node_conn(&proxy.url()).await;
    for (name, script) in scripts::all() {
        let sha = script
            .load_async(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("SCRIPT LOAD {name}: {e}"));
        assert_eq!(sha, script.get_hash(), "SCRIPT LOAD {name}");
    }
}

/// `SCRIPT LOAD`s a baseline's script `source` (named `name` in a failure) on `conn`, so that no
/// storm call meets `NOSCRIPT`.
async fn load_baseline(conn: &mut MultiplexedConnection, source: &str, name: &str) -> Arc<Script> {
    let script = Arc::new(Script::new(source));
    let sha = script
        .load_async(conn)
        .await
        .unwrap_or_else(|e| panic!("SCRIPT LOAD {name}: {e}"));
    assert_eq!(sha, script.get_hash());
    script
}

/// The path name of a hongbao grab result.
pub fn grab_path(result: &Result<GrabOutcome, Error>) -> &'static str {
    match result {
        Ok(GrabOutcome::Grabbed { .. }) => "grabbed",
        Ok(GrabOutcome::AlreadyGrabbed(_)) => "already grabbed",
        Ok(GrabOutcome::SoldOut) => "sold out",
        Ok(GrabOutcome::RateLimited { .. }) => "rate limited",
        Ok(GrabOutcome::Expired) => "expired",
        Ok(GrabOutcome::NotFound) => "not found",
        Ok(GrabOutcome::NotARecipient) => "not a recipient",
        Ok(GrabOutcome::NotOpenYet { .. }) => "not open yet",
        Ok(GrabOutcome::Cancelled) => "cancelled",
        Ok(GrabOutcome::WrongPassword) => "wrong password",
        Ok(GrabOutcome::GuessesExhausted) => "guesses exhausted",
        Ok(GrabOutcome::Entered { .. }) => "entered",
        Ok(GrabOutcome::NotDrawn) => "not drawn",
        Err(_) => "error",
    }
}

/// The `grab` scenario: setup (wallet, packet, scripts, sandboxes), then the storm.
pub async fn grab_storm(proxy: &Proxy, s: Settings) -> StormOut {
    let admin = Store::new(bench_config(proxy.url(), false));
    let total = i64::from(SHARES) * CENTS_PER_SHARE;
    wallet::deposit(&admin, "storm-sender", total, "storm-replay-fund")
        .await
        .expect("deposit");
    let req = lucky_packet(total, SHARES);
    let id: Arc<str> = create_packet(&admin, "storm-sender", &req).await.into();
    load_scripts(proxy).await;
    let stores = sandbox_stores(proxy, s).await;

    let packet = id.clone();
    let (outs, secs) = run_storm(proxy, stores, s.grabbers, move |store: Arc<Store>, i| {
        let packet = packet.clone();
        async move {
            let user = grabber(i);
            let mut out = UserOut::default();
            let mut mine: Option<Share> = None;
            let presses = if repeats(i) { 2 } else { 1 };
            for press in 0..presses {
                let result = packets::grab(&store, &packet, &user).await;
                out.paths.push(grab_path(&result));
                match (&result, mine) {
                    (Ok(GrabOutcome::Grabbed { share, .. }), _) => {
                        out.wins += 1;
                        if press > 0 {
                            out.bad = Some(format!("{user}'s repeat won again: {result:?}"));
                        }
                        mine = Some(*share);
                    }
                    (Ok(GrabOutcome::AlreadyGrabbed(share)), Some(m)) if *share == m => {}
                    (Ok(GrabOutcome::RateLimited { .. }), Some(_)) => {}
                    (Err(e), _) => out.error = Some(format!("{user}: {e}")),
                    (Ok(GrabOutcome::AlreadyGrabbed(_)), _) | (Ok(_), Some(_)) => {
                        out.bad = Some(format!(
                            "{user} (won {mine:?}) press {}: {result:?}",
                            press + 1
                        ));
                    }
                    (Ok(_), None) => {}
                }
            }
            out
        }
    })
    .await;
    let grabs = Keys::new(&admin.config().key_prefix).packet(&id).grabs;
    let checks = vec![Check::new(
        "packet handed out every share",
        &["HLEN", &grabs],
        s.expected_wins(),
    )];
    StormOut::from_users(outs, s.expected_wins(), checks, secs)
}

/// The `grab-seed` scenario: the pool of 300 JSON shares, the script, then the storm.
pub async fn grab_seed_storm(proxy: &Proxy, s: Settings) -> StormOut {
    let mut conn = node_conn(&proxy.url()).await;
    let [pool, _, users] = SEED_KEYS;
    let mut pipe = redis::pipe();
    for i in 0..SHARES {
        pipe.cmd("LPUSH")
            .arg(pool)
            .arg(json!({"id": i, "money": CENTS_PER_SHARE}).to_string())
            .ignore();
    }
    let _: () = pipe.query_async(&mut conn).await.expect("LPUSH");
    let seed = load_baseline(&mut conn, SEED_GRAB, "seed").await;
    let conns = sandbox_conns(proxy, s).await;

    let (outs, secs) = run_storm(
        proxy,
        conns,
        s.grabbers,
        move |mut conn: MultiplexedConnection, i| {
            let seed = seed.clone();
            async move {
                let user = grabber(i);
                let mut out = UserOut::default();
                let mut won = false;
                let presses = if repeats(i) { 2 } else { 1 };
                for press in 0..presses {
                    let mut call = seed.prepare_invoke();
                    for k in SEED_KEYS {
                        call.key(k);
                    }
                    call.key(&user);
                    let reply: Result<String, _> = call.invoke_async(&mut conn).await;
                    let path = match reply.as_deref() {
                        Ok("1") => "already grabbed",
                        Ok("0") => "sold out",
                        Ok(r) if r.starts_with(JSON_OBJECT) => "grabbed",
                        Ok(_) => "unexpected",
                        Err(_) => "error",
                    };
                    out.paths.push(path);
                    match (path, won) {
                        ("grabbed", _) => {
                            out.wins += 1;
                            let record: serde_json::Value =
                                serde_json::from_str(reply.as_deref().unwrap_or_default())
                                    .unwrap_or_default();
                            if record["userId"] != user.as_str() || press > 0 {
                                out.bad = Some(format!("{user} press {}: {reply:?}", press + 1));
                            }
                            won = true;
                        }
                        ("already grabbed", true) | ("sold out", false) => {}
                        ("error", _) => out.error = Some(format!("{user}: {reply:?}")),
                        _ => out.bad = Some(format!("{user} press {}: {reply:?}", press + 1)),
                    }
                }
                out
            }
        },
    )
    .await;
    let checks = vec![
        Check::new(
            "seed handed out every share",
            &["HLEN", users],
            s.expected_wins(),
        ),
        Check::new(
            "seed pool emptied",
            &["LLEN", pool],
            u64::from(SHARES) - s.expected_wins(),
        ),
    ];
    StormOut::from_users(outs, s.expected_wins(), checks, secs)
}

/// The `vote` scenario: the article posted, sandboxes connected, then the storm.
pub async fn vote_storm(proxy: &Proxy, s: Settings) -> StormOut {
    let admin = Store::new(bench_config(proxy.url(), false));
    let new = NewArticle::new("storm".into(), "https://example.com/".into()).expect("article");
    let article = match voting::post(&admin, "storm-poster", &new)
        .await
        .expect("post")
    {
        PostOutcome::Posted(a) => a,
        other => panic!("post failed: {other:?}"),
    };
    let id: Arc<str> = article.id.to_string().into();
    load_scripts(proxy).await;
    let stores = sandbox_stores(proxy, s).await;

    let article_id = id.clone();
    let (outs, secs) = run_storm(proxy, stores, s.voters, move |store: Arc<Store>, i| {
        let id = article_id.clone();
        async move {
            let user = voter(i);
            let result = voting::vote(&store, &id, &user, Direction::Up).await;
            let mut out = UserOut::default();
            out.paths.push(match &result {
                Ok(VoteOutcome::Voted { changed: true, .. }) => "voted",
                Ok(VoteOutcome::Voted { changed: false, .. }) => "unchanged",
                Ok(VoteOutcome::RateLimited { .. }) => "rate limited",
                Ok(VoteOutcome::Closed { .. }) => "closed",
                Ok(VoteOutcome::NotFound) => "not found",
                Err(_) => "error",
            });
            match &result {
                Ok(VoteOutcome::Voted { changed: true, .. }) => out.wins = 1,
                Err(e) => out.error = Some(format!("{user}: {e}")),
                Ok(other) => out.bad = Some(format!("{user}: {other:?}")),
            }
            out
        }
    })
    .await;
    let hash = SiteKeys::of(admin.config()).article(article.id);
    let checks = vec![Check::new(
        "article counted every vote",
        &["HGET", &hash, "votes"],
        1 + s.voters,
    )];
    StormOut::from_users(outs, s.voters, checks, secs)
}

/// The `vote-ch1` scenario: chapter 1's keys as `script_costs` sets them up, the script, then
/// the storm.
pub async fn vote_ch1_storm(proxy: &Proxy, s: Settings) -> StormOut {
    let mut conn = node_conn(&proxy.url()).await;
    let [_, voted, _, hash] = CH1_KEYS;
    let cutoff: Arc<str> = ch1_article(&mut conn).await.to_string().into();
    let ch1 = load_baseline(&mut conn, CH1_VOTE, "ch1").await;
    let conns = sandbox_conns(proxy, s).await;

    let (outs, secs) = run_storm(
        proxy,
        conns,
        s.voters,
        move |mut conn: MultiplexedConnection, i| {
            let (ch1, cutoff) = (ch1.clone(), cutoff.clone());
            async move {
                let user = voter(i);
                let mut call = ch1.prepare_invoke();
                for k in CH1_KEYS {
                    call.key(k);
                }
                call.arg("a").arg(&user).arg(&*cutoff);
                let reply: Result<i64, _> = call.invoke_async(&mut conn).await;
                let mut out = UserOut::default();
                match reply {
                    Ok(1) => {
                        out.paths.push("voted");
                        out.wins = 1;
                    }
                    Ok(n) => {
                        out.paths.push(if n == 0 { "closed" } else { "unexpected" });
                        out.bad = Some(format!("{user}: {n}"));
                    }
                    Err(e) => {
                        out.paths.push("error");
                        out.error = Some(format!("{user}: {e}"));
                    }
                }
                out
            }
        },
    )
    .await;
    let checks = vec![
        Check::new(
            "ch1 article counted every vote",
            &["HGET", hash, "votes"],
            1 + s.voters,
        ),
        Check::new(
            "ch1 voted set holds every voter",
            &["SCARD", voted],
            s.voters,
        ),
    ];
    StormOut::from_users(outs, s.voters, checks, secs)
}
