//! Read routes: the server's own time per request (every command's `usec` in `INFO
//! commandstats`, summed, over the requests) of the red packet's read routes at the largest
//! packet the default settings allow (`HONGBAO_MAX_COUNT`, 10,000 shares), and how many of
//! their calls took 1 ms or more (`SLOWLOG` at 1,000 µs), on a private `redis-server`:
//!
//! * `GET /packets/{id}` of an open packet with 9,999 grabs, its `GET /packets/{id}/grabs` last
//!   page, and the same view through the script it replaced (`lua/packet_view.lua` as commit
//!   34c64c3 had it, from `git show`: every grab and claim read on every view);
//! * a cancelled packet's view (its reveal's first page) and its pages deep in the grabs and
//!   deep in the un-grabbed shares, and the replaced script's view of it (the whole list);
//! * the support look-up `GET /support/packets/{id}` of the open packet (every page, one script
//!   call each, then the claims' and the journals' reads).
//!
//! ```text
//! cargo bench -p hongbao-tests --bench read_routes
//! ```
//!
//! The goal: no route's call at or above 1 ms, the packet view at most 200 µs at 10,000 grabs.
//! Writes the figures to `target/bench/read_routes.json` too.

use std::future::Future;
use std::process::Command;

use harness::RedisServer;
use hongbao::store::keys::Keys;
use hongbao::store::packets::{self, ViewAs};
use hongbao::store::{support, wallet};
use hongbao::Store;
use redis::aio::MultiplexedConnection;
use serde_json::json;

#[path = "support/mod.rs"]
mod support_bench;
use support_bench::{bench_config, create_packet, grab_as, info_field, lucky_packet, write_json};

/// The packet view's script as it was before it paged (every grab and claim on every view).
const BEFORE: &str = "34c64c3";
/// Requests per row.
const REQUESTS: usize = 200;
/// Shares of the benchmarked packets: `HONGBAO_MAX_COUNT`'s default.
const SHARES: u32 = 10_000;

/// A row: route, what it read, µs of server time per request, calls of 1 ms or more.
type Row = (String, String, f64, u64);

/// Runs `request` [`REQUESTS`] times from a reset `INFO commandstats` and slow log; returns
/// (µs of server time per request, calls that took ≥ 1 ms).
async fn measure<F, Fut>(conn: &mut MultiplexedConnection, mut request: F) -> (f64, u64)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = ()>,
{
    // One request first: the scripts loaded (a first EVALSHA answers NOSCRIPT and loads it).
    request().await;
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("slowlog-log-slower-than")
        .arg(1000)
        .arg("slowlog-max-len")
        .arg(REQUESTS * 200)
        .query_async(conn)
        .await
        .expect("CONFIG SET");
    let _: () = redis::cmd("SLOWLOG")
        .arg("RESET")
        .query_async(conn)
        .await
        .expect("SLOWLOG");
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query_async(conn)
        .await
        .expect("RESETSTAT");
    for _ in 0..REQUESTS {
        request().await;
    }
    let stats: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(conn)
        .await
        .expect("INFO");
    let slow: Vec<redis::Value> = redis::cmd("SLOWLOG")
        .arg("GET")
        .arg(-1)
        .query_async(conn)
        .await
        .expect("SLOWLOG GET");
    let usec: f64 = stats
        .lines()
        .filter_map(|l| l.strip_prefix("cmdstat_"))
        .filter(|l| !l.starts_with("config") && !l.starts_with("slowlog") && !l.starts_with("info"))
        .filter_map(|l| l.split_once(':'))
        .map(|(name, _)| info_field(&stats, &format!("cmdstat_{name}"), Some("usec")))
        .sum();
    (usec / REQUESTS as f64, slow.len() as u64)
}

/// A packet of [`SHARES`] shares, `grabs` of them grabbed (by `user-000000`, ...).
async fn packet(store: &Store, sender: &str, grabs: usize) -> String {
    let total = i64::from(SHARES) * 2;
    wallet::deposit(store, sender, total, &format!("fund-{sender}"))
        .await
        .expect("deposit");
    let id = create_packet(store, sender, &lucky_packet(total, SHARES)).await;
    let users: Vec<String> = (0..grabs).map(|i| format!("user-{i:06}")).collect();
    grab_as(store, &id, &users).await;
    id
}

/// `lua/packet_view.lua` as [`BEFORE`] had it, or `None` outside a git checkout.
fn before_script() -> Option<redis::Script> {
    let out = Command::new("git")
        .args(["show", &format!("{BEFORE}:lua/packet_view.lua")])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| redis::Script::new(&String::from_utf8_lossy(&out.stdout)))
}

/// The view of `id` through [`before_script`].
async fn before_view(store: &Store, script: &redis::Script, id: &str) {
    let pk = Keys::new(&store.config().key_prefix).packet(id);
    let mut conn = store.conn().await.expect("conn");
    let _: redis::Value = script
        .key(&pk.meta)
        .key(&pk.grabs)
        .key(&pk.claims)
        .key(&pk.recipients)
        .key(&pk.shares)
        .arg("user-000001")
        .invoke_async(&mut conn)
        .await
        .expect("the replaced view");
}

/// The page of `id` from `from` as `user-000001` sees it.
async fn page(store: &Store, id: &str, from: u32) {
    let v = packets::view_as(store, id, "user-000001", from)
        .await
        .expect("view");
    assert!(matches!(v, ViewAs::Found(_)));
}

fn main() {
    let server = RedisServer::start();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let rows: Vec<Row> = rt.block_on(async {
        let store = Store::new(bench_config(server.url(), false));
        let client = redis::Client::open(server.url()).expect("client");
        let mut conn = client
            .get_multiplexed_async_connection()
            .await
            .expect("connect");
        let open = packet(&store, "reader-open", SHARES as usize - 1).await;
        let closed = packet(&store, "reader-closed", 5_000).await;
        packets::cancel(&store, &closed, "reader-closed")
            .await
            .expect("cancel");
        let before = before_script();
        let (s, o, c) = (&store, open.as_str(), closed.as_str());
        let mut rows = Vec::new();
        let mut row = |route: &str, what: &str, (us, slow): (f64, u64)| {
            rows.push((route.to_string(), what.to_string(), us, slow));
        };
        row(
            "GET /packets/{id}",
            "open, 9,999 grabs: the first page",
            measure(&mut conn, || page(s, o, 1)).await,
        );
        row(
            "GET /packets/{id}/grabs",
            "open, 9,999 grabs: the last page",
            measure(&mut conn, || page(s, o, 9_901)).await,
        );
        row(
            "GET /packets/{id}",
            "cancelled, 5,000 grabs: the reveal's first page",
            measure(&mut conn, || page(s, c, 1)).await,
        );
        row(
            "GET /packets/{id}/grabs",
            "cancelled: grabs 4,951-5,000, shares 5,001-5,050",
            measure(&mut conn, || page(s, c, 4_951)).await,
        );
        row(
            "GET /packets/{id}/grabs",
            "cancelled: the last page (un-grabbed shares 9,901-10,000)",
            measure(&mut conn, || page(s, c, 9_901)).await,
        );
        if let Some(script) = &before {
            row(
                &format!("GET /packets/{{id}} before ({BEFORE})"),
                "open, 9,999 grabs",
                measure(&mut conn, || before_view(s, script, o)).await,
            );
            row(
                &format!("GET /packets/{{id}} before ({BEFORE})"),
                "cancelled, 5,000 grabs",
                measure(&mut conn, || before_view(s, script, c)).await,
            );
        }
        let (us, slow) = measure(&mut conn, || async {
            support::packet(s, o)
                .await
                .expect("look-up")
                .expect("found");
        })
        .await;
        row(
            "GET /support/packets/{id}",
            "open, 9,999 grabs: every page (100 script calls) + claims + journals",
            (us, slow),
        );
        rows
    });
    println!("| route | read | server µs per request | calls ≥ 1 ms |");
    println!("| --- | --- | ---: | ---: |");
    for (route, what, us, slow) in &rows {
        println!("| `{route}` | {what} | {us:.1} | {slow} |");
    }
    let path = write_json(
        "read_routes",
        &json!({
            "requests_per_row": REQUESTS,
            "shares": SHARES,
            "rows": rows.iter().map(|(route, what, us, slow)| json!({
                "route": route, "read": what, "server_us_per_request": us, "calls_at_or_above_1ms": slow,
            })).collect::<Vec<_>>(),
        }),
    );
    println!("wrote {}", path.display());
}
