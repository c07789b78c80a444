//! Read routes: the server's own time per request (the durations of the commands the store
//! sends, each script call with its commands, from the slow log with every command in it) of
//! every read route at the largest sizes the default settings allow, and how many of those
//! commands took 1 ms or more, on a private `redis-server`:
//!
//! * the red packet's ([`packets`]): `GET /packets/{id}` of an open packet with 9,999 grabs,
//!   its `GET /packets/{id}/grabs` last page, and the same view through the script it replaced
//!   (`packet_view.lua` as commit 34c64c3 had it, from `git show`: every grab and claim
//!   read on every view); a cancelled packet's view (its reveal's first page) and its pages
//!   deep in the grabs and deep in the un-grabbed shares, and the replaced script's view of it;
//!   the support look-up `GET /support/packets/{id}` of the open packet (every page, one script
//!   call each, then the claims' and the journals' reads);
//! * a user's ([`accounts`]): `GET /wallet` and `GET /support/wallets/{user_id}` of a wallet
//!   with a full ledger, `GET /packets` (history, 100 a page, first and deep) and
//!   `GET /packets/summary` of a user with 2,000 sent packets;
//! * a merchant's ([`merchants`]): `GET /merchants/{merchant_id}` (its ledger full, first and
//!   last page), `GET /merchants/{merchant_id}/packets`, `GET /campaigns` (100 a page),
//!   `GET /campaigns/{id}` with the caller's ten codes, `GET /campaigns/{id}/coupons` of a
//!   24-pool campaign (100 a page), `GET /coupons` (100 a page) and
//!   `GET /support/coupons/{code}`;
//! * the voting site's ([`articles`]): `GET /articles` (first and deep page) and
//!   `GET /groups/{group}/articles` (first and deep page) of 10,000 articles in one group,
//!   and a group's first page on the one-time build of its ranking (a group made before
//!   groups kept rankings).
//!
//! ```text
//! cargo bench -p hongbao-tests --bench read_routes
//! ```
//!
//! The goal: no route's call at or above 1 ms, the packet view at most 200 µs at 10,000 grabs.
//! Writes the figures to `target/bench/read_routes.json` too.

use std::future::Future;

use harness::RedisServer;
use hongbao::Store;
use redis::aio::MultiplexedConnection;
use serde_json::json;

#[path = "../support/mod.rs"]
mod support_bench;
use support_bench::{bench_config, runtime, write_json};

mod accounts;
mod articles;
mod merchants;
mod packets;

/// Requests per row.
const REQUESTS: usize = 200;

/// A row: route, what it read, µs of server time per request, calls of 1 ms or more.
type Row = (String, String, f64, u64);

/// The row of `route` reading `what`, measured as `(µs per request, calls ≥ 1 ms)`.
fn row(route: &str, what: &str, (us, slow): (f64, u64)) -> Row {
    (route.to_string(), what.to_string(), us, slow)
}

/// A slow-log entry: id, Unix time (s), duration (µs), the command's words, the client's
/// address (`?:0` for a script's own commands), the client's name.
type LogEntry = (i64, i64, u64, Vec<Vec<u8>>, String, String);

/// Slow-log entries kept at most: every command of a row's requests (the support look-up's
/// request sends about 300).
const LOG_LEN: usize = REQUESTS * 1_000;

/// Runs `request` [`REQUESTS`] times with every command in the slow log (`slowlog-log-slower-than
/// 0`); returns (µs of server time per request, commands that took ≥ 1 ms). Only the commands
/// a client sent count: a script's own commands are in the log too (client `?:0`), and in
/// `INFO commandstats`, inside their script's time and again alone, so summing those would
/// count them twice.
pub async fn measure<F, Fut>(conn: &mut MultiplexedConnection, mut request: F) -> (f64, u64)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = ()>,
{
    // One request first: the scripts loaded (a first EVALSHA answers NOSCRIPT and loads it).
    request().await;
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("slowlog-log-slower-than")
        .arg(0)
        .arg("slowlog-max-len")
        .arg(LOG_LEN)
        .query_async(conn)
        .await
        .expect("CONFIG SET");
    let _: () = redis::cmd("SLOWLOG")
        .arg("RESET")
        .query_async(conn)
        .await
        .expect("SLOWLOG");
    for _ in 0..REQUESTS {
        request().await;
    }
    let log: Vec<LogEntry> = redis::cmd("SLOWLOG")
        .arg("GET")
        .arg(-1)
        .query_async(conn)
        .await
        .expect("SLOWLOG GET");
    assert!(log.len() < LOG_LEN, "the slow log filled up");
    let sent: Vec<u64> = log
        .iter()
        .filter(|(.., args, client, _)| {
            let name = args.first().map(|a| a.to_ascii_lowercase());
            client != "?:0" && name.as_deref() != Some(b"slowlog".as_slice())
        })
        .map(|(_, _, usec, ..)| *usec)
        .collect();
    if std::env::var_os("READ_ROUTES_BREAKDOWN").is_some() {
        print_breakdown(&log);
    }
    let slow = sent.iter().filter(|&&usec| usec >= 1_000).count() as u64;
    (sent.iter().sum::<u64>() as f64 / REQUESTS as f64, slow)
}

/// Prints the µs per request of each command in `log`, a script's own commands apart
/// (`READ_ROUTES_BREAKDOWN` set: where a row's time goes).
fn print_breakdown(log: &[LogEntry]) {
    let mut by: std::collections::BTreeMap<(bool, String), (u64, u64)> = Default::default();
    for (_, _, usec, args, client, _) in log {
        let name = String::from_utf8_lossy(args.first().map_or(&[][..], |a| a)).to_lowercase();
        let e = by.entry((client == "?:0", name)).or_default();
        e.0 += 1;
        e.1 += usec;
    }
    for ((in_script, name), (calls, usec)) in by {
        let whose = if in_script { "  in a script" } else { "sent" };
        let per = REQUESTS as f64;
        println!(
            "    {whose} {name}: {:.1} calls, {:.1} µs per request",
            calls as f64 / per,
            usec as f64 / per
        );
    }
}

fn main() {
    let server = RedisServer::start();
    let rows: Vec<Row> = runtime().block_on(async {
        let mut cfg = bench_config(server.url(), false);
        cfg.voting.articles_per_day = 0; // one poster posts the site's 10,000 articles
        let store = Store::new(cfg);
        let client = redis::Client::open(server.url()).expect("client");
        // A slow log of a row's every command takes longer to read than a request.
        let config = redis::AsyncConnectionConfig::new()
            .set_response_timeout(Some(std::time::Duration::from_secs(60)));
        let mut conn = client
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .expect("connect");
        let mut rows = packets::rows(&store, &mut conn).await;
        rows.extend(accounts::rows(&store, &mut conn).await);
        rows.extend(merchants::rows(&store, &mut conn).await);
        rows.extend(articles::rows(&store, &mut conn).await);
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
            "rows": rows.iter().map(|(route, what, us, slow)| json!({
                "route": route, "read": what, "server_us_per_request": us, "calls_at_or_above_1ms": slow,
            })).collect::<Vec<_>>(),
        }),
    );
    println!("wrote {}", path.display());
}
