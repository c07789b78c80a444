//! Draw at scale: one draw packet of 10,000 shares, 1,000,000 distinct users entered through
//! `lua/draw_enter.lua` (each with its own ticket), then the draw (`store::packets::draw::run`,
//! `lua/draw_run.lua` in chunks of `DRAW_CHUNK` winners), on a private `redis-server` (or the
//! Valkey that `HONGBAO_TEST_SERVER` names):
//!
//! * an entry's server time (`INFO commandstats` `usec_per_call` of `EVALSHA`, and of the
//!   `ZADD` inside it) over 10,000 entries ending at 10,000, 100,000 and 1,000,000 entrants
//!   (an entry is O(log n): the bench fails when the last costs over 3× the first), and that
//!   of the entry's first call, `grab.lua` answering the seed;
//! * the draw: its wall time, its `draw_run.lua` calls and each one's server time, the longest
//!   command (`SLOWLOG` from 100 µs), `LATENCY LATEST` (threshold 1 ms) and the longest
//!   round trip of a `PING` sent every millisecond meanwhile; the bench fails when any command
//!   of the draw (or `LATENCY LATEST`) held the server 5 ms or more, since no call may;
//! * chunk sizes: four small draws (4,000 winners among 20,000) in chunks of 1,000, 500, 250
//!   and 100, each call's server time (`SLOWLOG`), to choose `DRAW_CHUNK` by;
//! * memory: `used_memory` before the entries, after them and after the draw, and `MEMORY
//!   USAGE` of the tickets set;
//! * dropping the tickets set (a copy of it): `DEL`, `UNLINK`, and expiry (how `settle.lua`'s
//!   TTL drops it) with `lazyfree-lazy-expire` off and on, each with the same three figures;
//!   reported, not failed (the draw's rule is about the draw).
//!
//! ```text
//! cargo bench -p hongbao-tests --bench draw_scale
//! BENCH_ENTRANTS=100000 BENCH_ENTRY_SECS=60 cargo bench -p hongbao-tests --bench draw_scale
//! HONGBAO_TEST_SERVER=valkey8 cargo bench -p hongbao-tests --bench draw_scale
//! ```
//!
//! The entry window (`BENCH_ENTRY_SECS`, default 90 s) must hold every entry: the bench
//! waits for `draw_at` as any draw does (no clock is moved); an entry answered `draw_due`
//! fails the bench with a hint to raise it. Writes `target/bench/draw_scale.json`
//! (`draw_scale_<engine>.json` on Valkey).

use std::time::Instant;

use harness::{Engine, RedisServer};
use hongbao::domain::split::Mode;
use hongbao::draws::rules::{self as draws, DrawTerms};
use hongbao::packets::draw::{self, DrawState};
use hongbao::store::keys::Keys;
use hongbao::store::scripts::{DRAW_ENTER, DRAW_RUN};
use hongbao::wallet;
use hongbao::{Config, Store};
use redis::aio::MultiplexedConnection;
use serde_json::json;

#[path = "../support/mod.rs"]
mod support;

mod cleanup;
mod enter;
mod hold;
mod report;
mod sweep;

use support::{bench_config, create_packet, env_num, fail_on, info_field, lucky_packet, Started};

/// The most one command (or one expiry step) may hold the server, µs: none may hold it 5 ms.
pub const LIMIT_USEC: u64 = 5_000;
/// Entry-cost windows end at these entrant counts (those up to the bench's entrants).
const CHECKPOINTS: [usize; 3] = [10_000, 100_000, 1_000_000];

/// The bench's own connection to its server.
pub struct Server {
    /// The connection the bench's commands and entries go through.
    pub conn: MultiplexedConnection,
    client: redis::Client,
}

impl Server {
    /// Runs `args` (a command as its words); panics on an error.
    pub async fn query<T: redis::FromRedisValue>(&mut self, args: &[&str]) -> T {
        redis::cmd(args[0])
            .arg(&args[1..])
            .query_async(&mut self.conn)
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", args.join(" ")))
    }

    /// [`Server::query`] whose reply is not needed.
    pub async fn cmd(&mut self, args: &[&str]) {
        let _: redis::Value = self.query(args).await;
    }

    /// Another connection to the same server.
    pub async fn connect(&self) -> MultiplexedConnection {
        connect(&self.client).await
    }
}

/// A connection whose replies may take a minute: copying or deleting a set of a million
/// members takes the server far longer than a request does.
async fn connect(client: &redis::Client) -> MultiplexedConnection {
    let config = redis::AsyncConnectionConfig::new()
        .set_response_timeout(Some(std::time::Duration::from_secs(60)));
    client
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .expect("connect")
}

/// An `INFO <section>` reply.
pub async fn info(s: &mut Server, section: &str) -> String {
    s.query(&["INFO", section]).await
}

async fn used_memory(s: &mut Server) -> u64 {
    info_field(&info(s, "memory").await, "used_memory", None) as u64
}

/// A draw packet's size: entrants, shares (= winners when enough enter), entry window.
pub struct Settings {
    /// Distinct users entered.
    pub entrants: usize,
    /// Shares of the packet.
    pub winners: u32,
    /// The entry window, s.
    pub entry_secs: u64,
}

/// The draw as measured.
pub struct Drawn {
    /// Wall time of `draw::run`, ms.
    pub wall_ms: f64,
    /// `EVALSHA` calls (all `draw_run.lua`).
    pub calls: u64,
    /// Their `usec_per_call`.
    pub usec_per_call: f64,
    /// Each `draw_run.lua` call's server time, µs, in order (`SLOWLOG`).
    pub call_usec: Vec<u64>,
    /// What the draw held the server for.
    pub held: hold::Held,
}

/// Everything the bench measured.
pub struct Figures {
    /// The server's version.
    pub server: String,
    /// The large draw's size.
    pub settings: Settings,
    /// Its entries.
    pub entries: enter::Entries,
    /// `used_memory` before the entries, after them, after the draw.
    pub memory: [u64; 3],
    /// `MEMORY USAGE` of the tickets set once everyone entered.
    pub tickets_bytes: u64,
    /// Its draw.
    pub drawn: Drawn,
    /// The small draws, one per chunk size.
    pub swept: Vec<sweep::Swept>,
    /// Dropping the tickets set each way.
    pub dropped: Vec<cleanup::Dropped>,
    /// The server's lazyfree settings (name, value).
    pub lazyfree: Vec<(String, String)>,
}

/// Creates a draw packet of `st` for `sender` (funded here); answers its id.
async fn draw_packet(store: &Store, st: &Settings, sender: &str) -> String {
    let total = i64::from(st.winners) * 100;
    let out = wallet::deposit(store, sender, total, &format!("{sender}-fund"))
        .await
        .expect("deposit");
    assert!(
        matches!(out, wallet::DepositOutcome::Applied { .. }),
        "{out:?}"
    );
    let req = hongbao::packets::NewPacket {
        mode: Mode::Fixed,
        draw: Some(DrawTerms {
            entry_secs: st.entry_secs,
        }),
        expires_in_secs: st.entry_secs + 3600,
        ..lucky_packet(total, st.winners)
    };
    create_packet(store, sender, &req).await
}

/// The ticket the draw's last winner must hold: the `winners`-th smallest of every entrant's.
fn expected_threshold(seed: &str, entrants: usize, winners: usize) -> Option<String> {
    if entrants < winners || winners == 0 {
        return None;
    }
    let mut tickets: Vec<String> = (0..entrants)
        .map(|i| draws::ticket(seed, &enter::user(i)).expect("ticket"))
        .collect();
    let (_, nth, _) = tickets.select_nth_unstable(winners - 1);
    Some(nth.clone())
}

/// Sleeps until the server's clock has reached `draw_at_ms`.
async fn until_due(s: &mut Server, draw_at_ms: i64) {
    loop {
        let t: Vec<String> = s.query(&["TIME"]).await;
        let now = t[0].parse::<i64>().unwrap() * 1000 + t[1].parse::<i64>().unwrap() / 1000;
        if now > draw_at_ms {
            return;
        }
        let wait = (draw_at_ms - now + 5).min(10_000) as u64;
        eprintln!(
            "waiting {:.1} s for draw_at",
            (draw_at_ms - now) as f64 / 1e3
        );
        tokio::time::sleep(std::time::Duration::from_millis(wait)).await;
    }
}

/// Runs the draw with every command logged; checks its outcome.
async fn run_draw(s: &mut Server, store: &Store, id: &str, st: &Settings) -> Drawn {
    s.cmd(&["CONFIG", "RESETSTAT"]).await;
    let ((state, wall_ms), held) = hold::measure(s, 10_000, hold::SCRIPT_CALLS, async {
        let started = Instant::now();
        let state = draw::run(store, id).await.expect("draw");
        (state, started.elapsed().as_secs_f64() * 1e3)
    })
    .await;
    let winners = u64::from(st.winners).min(st.entrants as u64);
    assert_eq!(
        state,
        DrawState::Drawn {
            winners,
            entrants: st.entrants as u64
        }
    );
    let stats = info(s, "commandstats").await;
    let call_usec = held
        .measured()
        .filter(|l| l.command == "evalsha" && l.sha == DRAW_RUN.get_hash())
        .map(|l| l.usec)
        .collect();
    Drawn {
        wall_ms,
        calls: info_field(&stats, "cmdstat_evalsha", Some("calls")) as u64,
        usec_per_call: info_field(&stats, "cmdstat_evalsha", Some("usec_per_call")),
        call_usec,
        held,
    }
}

/// Creates the packet, enters everyone, runs the draw, drops the entrants each way.
async fn measure(server_url: String, st: Settings) -> Figures {
    let cfg: Config = bench_config(server_url.clone(), false);
    let store = Store::new(cfg.clone());
    let client = redis::Client::open(server_url).expect("client");
    let conn = connect(&client).await;
    let mut s = Server { conn, client };
    let server_info = info(&mut s, "server").await;
    let version = |field: &str| {
        server_info
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{field}:")))
            .map(|v| v.trim().to_string())
    };
    let server = match (version("valkey_version"), version("redis_version")) {
        (Some(v), _) => format!("valkey-server {v}"),
        (None, Some(v)) => format!("redis-server {v}"),
        (None, None) => "a server of unknown version".to_string(),
    };
    for script in [&*DRAW_ENTER, &*DRAW_RUN] {
        let _: String = s.query(&["SCRIPT", "LOAD", script.source()]).await;
    }
    let id = draw_packet(&store, &st, "draw-sender").await;
    let small = sweep::prepare(&mut s, &store, &cfg).await;
    let before = used_memory(&mut s).await;
    let keys = Keys::new(&cfg.key_prefix);
    let pk = keys.packet(&id);
    let seed: String = s.query(&["HGET", &pk.meta, "draw_seed"]).await;
    let draw_at: i64 = s.query(&["HGET", &pk.meta, "draw_at"]).await;
    let rate_of = |user: &str| keys.grab_rate(&id, user);
    let target = enter::Target {
        pk: &pk,
        rate_of: &rate_of,
        cfg: &cfg,
        seed: &seed,
    };
    let entries = enter::enter_all(&mut s, &target, st.entrants, &CHECKPOINTS).await;
    let card: usize = s.query(&["ZCARD", &pk.tickets]).await;
    assert_eq!(card, st.entrants, "entrants in the tickets set");
    let entered = used_memory(&mut s).await;
    let tickets_bytes: u64 = s
        .query(&["MEMORY", "USAGE", &pk.tickets, "SAMPLES", "0"])
        .await;
    let threshold = expected_threshold(&seed, st.entrants, st.winners as usize);
    until_due(&mut s, draw_at).await;
    let drawn = run_draw(&mut s, &store, &id, &st).await;
    let stored: Option<String> = s.query(&["HGET", &pk.meta, "draw_threshold"]).await;
    assert_eq!(stored, threshold, "the last winner's ticket");
    let after = used_memory(&mut s).await;
    let mut lazyfree = Vec::new();
    for name in ["lazyfree-lazy-expire", "lazyfree-lazy-user-del"] {
        let v: Vec<String> = s.query(&["CONFIG", "GET", name]).await;
        lazyfree.push((name.to_string(), v.get(1).cloned().unwrap_or_default()));
    }
    let swept = sweep::draw_each(&mut s, &store, &small).await;
    let dropped = cleanup::drop_each_way(&mut s, &pk.tickets).await;
    Figures {
        server,
        settings: st,
        entries,
        memory: [before, entered, after],
        tickets_bytes,
        drawn,
        swept,
        dropped,
        lazyfree,
    }
}

fn main() {
    let started = Started::now();
    let settings = Settings {
        entrants: env_num("BENCH_ENTRANTS").unwrap_or(1_000_000),
        winners: env_num("BENCH_WINNERS").unwrap_or(10_000),
        entry_secs: env_num("BENCH_ENTRY_SECS").unwrap_or(90),
    };
    let engine = Engine::current();
    let server = RedisServer::start();
    let rt = support::runtime();
    let figures = rt.block_on(measure(server.url(), settings));
    drop(server);
    report::print(&figures);
    let problems = report::problems(&figures);
    let mut json = report::json(&figures);
    json["problems"] = json!(problems);
    json["engine"] = json!(engine.to_string());
    let name = match engine {
        Engine::Redis => "draw_scale".to_string(),
        other => format!("draw_scale_{other}"),
    };
    let path = support::write_json(&name, &json);
    println!("figures: {}", path.display());
    started.print_total();
    fail_on(&problems);
}
