//! Packet memory: the bytes Redis holds for one red packet after every share is grabbed
//! (`MEMORY USAGE <key> SAMPLES 0` of each of its keys), for a 100- and a 10,000-share packet,
//! beside the original red-packet blog post's layout for the same packet and the same grabbers
//! (a list of JSON shares, emptied by the grabs; a JSON detail list `{"id", "money", "userId"}`;
//! a hash of users who grabbed), on a private `redis-server`.
//!
//! ```text
//! cargo bench -p hongbao-tests --bench packet_memory
//! ```
//!
//! hongbao's keys are counted in two groups: the packet's own (meta hash, share list, grabs
//! hash, order list: the page index of the view), which live until the packet is settled and
//! its retention ends, and the grab rate-limit counters (a win writes none; a repeat opens one,
//! expiring with its window). Writes the figures to `target/bench/packet_memory.json` too.
//!
//! Then the bytes of one user's red-packet history: `n` packets sent by one user
//! (greeting `恭喜发财`) and each claimed by one other user, `MEMORY USAGE` of the sender's
//! sent list, the grabber's received list and their totals hashes, per entry, for `n` = 100
//! (Redis keeps a sorted set of up to 128 short members as a listpack) and 1,000 (a skiplist).

use harness::RedisServer;
use hongbao::packets::{self, ClaimOutcome, CreateOutcome, GrabOutcome, NewPacket};
use hongbao::store::keys::Keys;
use hongbao::wallet;
use hongbao::Store;
use redis::aio::MultiplexedConnection;
use serde_json::json;

#[path = "support/mod.rs"]
mod support;
use support::{bench_config, grab_as, lucky_packet, write_json};

/// The grabber ids both layouts store: `user-<n>` (11 to 15 bytes).
fn user(i: usize) -> String {
    format!("user-{i:06}")
}

async fn usage(conn: &mut MultiplexedConnection, key: &str) -> u64 {
    let n: Option<u64> = redis::cmd("MEMORY")
        .arg("USAGE")
        .arg(key)
        .arg("SAMPLES")
        .arg(0)
        .query_async(conn)
        .await
        .expect("MEMORY USAGE");
    n.unwrap_or(0)
}

/// One packet of `count` shares grabbed by `count` users; (packet keys bytes, rate-limit bytes).
async fn hongbao_packet(
    store: &Store,
    conn: &mut MultiplexedConnection,
    count: usize,
) -> (u64, u64) {
    let total = count as i64 * 100;
    wallet::deposit(store, "mem-sender", total, &format!("fund-{count}"))
        .await
        .expect("deposit");
    let new = NewPacket {
        greeting: Some("恭喜发财".into()),
        ..lucky_packet(total, count as u32)
    };
    let CreateOutcome::Created(p) = packets::create(store, "mem-sender", &new, None)
        .await
        .expect("create")
    else {
        panic!("create failed")
    };
    let users: Vec<String> = (0..count).map(user).collect();
    grab_as(store, &p.packet_id, &users).await;
    let keys = Keys::new(&store.config().key_prefix);
    let pk = keys.packet(&p.packet_id);
    let mut own = 0;
    for k in [&pk.meta, &pk.shares, &pk.grabs, &pk.order, &pk.claims] {
        own += usage(conn, k).await;
    }
    let mut limits = 0;
    for i in 0..count {
        limits += usage(conn, &keys.grab_rate(&p.packet_id, &user(i))).await;
    }
    (own, limits)
}

/// `n` packets of 1 share sent by one user and claimed by another; bytes of (sent list, received
/// list, both totals hashes).
async fn history_bytes(
    store: &Store,
    conn: &mut MultiplexedConnection,
    n: usize,
) -> (u64, u64, u64) {
    let (sender, grabber) = (format!("hist-sender-{n}"), format!("hist-grabber-{n}"));
    wallet::deposit(store, &sender, n as i64 * 100, "fund")
        .await
        .expect("deposit");
    let new = NewPacket {
        greeting: Some("恭喜发财".into()),
        ..lucky_packet(100, 1)
    };
    for _ in 0..n {
        let CreateOutcome::Created(p) = packets::create(store, &sender, &new, None)
            .await
            .expect("create")
        else {
            panic!("create failed")
        };
        let g = packets::grab(store, &p.packet_id, &grabber)
            .await
            .expect("grab");
        assert!(matches!(g, GrabOutcome::Grabbed { .. }));
        let c = packets::claim(store, &p.packet_id, &grabber)
            .await
            .expect("claim");
        assert!(matches!(c, ClaimOutcome::Claimed { repeat: false, .. }));
    }
    let keys = Keys::new(&store.config().key_prefix);
    let (s, g) = (keys.wallet(&sender), keys.wallet(&grabber));
    let sent = usage(conn, &s.sent).await;
    let received = usage(conn, &g.received).await;
    let totals = usage(conn, &s.history_totals).await + usage(conn, &g.history_totals).await;
    (sent, received, totals)
}

/// The original red-packet blog post's layout for the same packet after the same grabs.
async fn seed_packet(conn: &mut MultiplexedConnection, count: usize) -> u64 {
    let tag = format!("seed:{{{count}}}");
    let (pool, detail, users) = (
        format!("{tag}:pool"),
        format!("{tag}:detail"),
        format!("{tag}:users"),
    );
    // The seed's shares are JSON objects in a list; a grab moves one, with the user id added,
    // to the detail list and marks the user in the hash (its script, run here as commands).
    for chunk in (0..count).collect::<Vec<_>>().chunks(1000) {
        let mut pipe = redis::pipe();
        for &i in chunk {
            pipe.cmd("LPUSH")
                .arg(&pool)
                .arg(json!({"id": i, "money": 100}).to_string())
                .ignore();
        }
        let _: () = pipe.query_async(conn).await.expect("pool");
    }
    for chunk in (0..count).collect::<Vec<_>>().chunks(1000) {
        let mut pipe = redis::pipe();
        for &i in chunk {
            pipe.cmd("RPOP").arg(&pool).ignore();
            pipe.cmd("LPUSH")
                .arg(&detail)
                .arg(json!({"id": i, "money": 100, "userId": user(i)}).to_string())
                .ignore();
            pipe.cmd("HSET").arg(&users).arg(user(i)).arg("1").ignore();
        }
        let _: () = pipe.query_async(conn).await.expect("grabs");
    }
    let mut bytes = 0;
    for k in [&pool, &detail, &users] {
        bytes += usage(conn, k).await;
    }
    bytes
}

fn main() {
    let server = RedisServer::start();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let rows = rt.block_on(async {
        let store = Store::new(bench_config(server.url(), false));
        let client = redis::Client::open(server.url()).expect("client");
        let mut conn = client
            .get_multiplexed_async_connection()
            .await
            .expect("connect");
        let mut rows = Vec::new();
        for count in [100usize, 10_000] {
            let (own, limits) = hongbao_packet(&store, &mut conn, count).await;
            let seed = seed_packet(&mut conn, count).await;
            rows.push((count, own, limits, seed));
        }
        let mut history = Vec::new();
        for n in [100usize, 1_000] {
            let (sent, received, totals) = history_bytes(&store, &mut conn, n).await;
            history.push((n, sent, received, totals));
        }
        (rows, history)
    });
    let (rows, history) = rows;
    println!("| shares (= grabbers) | hongbao packet keys, bytes | + rate-limit counters (expire with their window) | seed 000 layout, bytes | hongbao / seed (packet keys) | per share: hongbao / seed |");
    println!("| ---: | ---: | ---: | ---: | ---: | ---: |");
    for &(count, own, limits, seed) in &rows {
        println!(
            "| {count} | {own} | {limits} | {seed} | {:.2}× | {:.0} / {:.0} B |",
            own as f64 / seed as f64,
            own as f64 / count as f64,
            seed as f64 / count as f64
        );
    }
    println!("\nbytes = MEMORY USAGE <key> SAMPLES 0, summed over the packet's keys after every share is grabbed (no claims yet).");
    println!("\n| history entries per list | sent list, bytes | per sent entry | received list, bytes | per received entry | totals hashes (both users), bytes |");
    println!("| ---: | ---: | ---: | ---: | ---: | ---: |");
    for &(n, sent, received, totals) in &history {
        println!(
            "| {n} | {sent} | {:.0} B | {received} | {:.0} B | {totals} |",
            sent as f64 / n as f64,
            received as f64 / n as f64
        );
    }
    println!("\nhistory: one sender's n packets (greeting 恭喜发财, 1 share each), each claimed by one grabber (sender id `hist-sender-<n>`).");
    let json = json!({
        "bench": "packet_memory",
        "history": history.iter().map(|&(n, sent, received, totals)| json!({
            "entries": n, "sent_bytes": sent, "received_bytes": received, "totals_bytes": totals,
        })).collect::<Vec<_>>(),
        "rows": rows.iter().map(|&(count, own, limits, seed)| json!({
            "shares": count, "hongbao_packet_bytes": own, "hongbao_rate_limit_bytes": limits,
            "seed_bytes": seed,
        })).collect::<Vec<_>>(),
    });
    let path = write_json("packet_memory", &json);
    println!("figures: {}", path.display());
}
