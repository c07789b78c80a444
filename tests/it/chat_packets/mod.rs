//! Red packets as chat apps ship them, through the routers against real servers (standalone
//! and a 3-master cluster): scheduled opening, covers, and the fairness receipt.
//!
//! Cancelling (`cancel.rs`), password packets (`password.rs`) and a crowd guessing a
//! password (`guesses.rs`) have their own files.

mod cancel;
mod guesses;
mod open_packets;
mod password;
mod tombstones;

use std::sync::Arc;

use futures::future::join_all;
use harness::{Backend, TestRedis};
use hongbao::Store;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::common::{self, call, event, snapshot, with_body, with_sub, Function};

/// `v` with the `PACKET_ID` placeholder replaced everywhere.
fn with_packet(v: Value, id: &str) -> Value {
    serde_json::from_str(&v.to_string().replace("PACKET_ID", id)).unwrap()
}

/// `POST /packets` by `sender` with `body`: (status, answer).
async fn create(store: &Arc<Store>, sender: &str, body: &Value) -> (u16, Value) {
    let ev = with_sub(
        with_body(event("create-packet-lucky"), &body.to_string()),
        sender,
    );
    let (s, b, _) = call(store, Function::CreatePacket, &ev).await;
    (s, b)
}

/// `POST /packets/{id}/grab` by `user`: (status, answer, `Retry-After`).
async fn grab(store: &Arc<Store>, id: &str, user: &str) -> (u16, Value, Option<String>) {
    call(
        store,
        Function::Grab,
        &with_sub(with_packet(event("grab-grab"), id), user),
    )
    .await
}

/// `GET /packets/{id}` as `user`.
async fn view(store: &Arc<Store>, id: &str, user: &str) -> Value {
    let (s, b, _) = call(
        store,
        Function::Grab,
        &with_sub(with_packet(event("grab-view"), id), user),
    )
    .await;
    assert_eq!(s, 200, "{b}");
    b
}

/// Every share of a revealed packet as `user` reads them: the view's `reveal.shares_cents`,
/// then each page's of `GET /packets/{id}/grabs` from the view's `next_cursor` to the last.
async fn revealed_shares(store: &Arc<Store>, id: &str, user: &str) -> Vec<i64> {
    let cents = |v: &Value| -> Vec<i64> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_i64().unwrap())
            .collect()
    };
    let first = view(store, id, user).await;
    let mut shares = cents(&first["reveal"]["shares_cents"]);
    let mut cursor = first["next_cursor"].as_str().map(str::to_string);
    while let Some(at) = cursor {
        let mut ev = with_sub(with_packet(event("grab-grabs"), id), user);
        ev["rawQueryString"] = Value::from(format!("cursor={at}"));
        ev["queryStringParameters"]["cursor"] = Value::from(at);
        let (s, page, _) = call(store, Function::Grab, &ev).await;
        assert_eq!(s, 200, "{page}");
        shares.extend(cents(&page["shares_cents"]));
        cursor = page["next_cursor"].as_str().map(str::to_string);
    }
    shares
}

/// Unix ms of an RFC 3339 time.
fn ms(text: &Value) -> i64 {
    chrono::DateTime::parse_from_rfc3339(text.as_str().unwrap())
        .unwrap()
        .timestamp_millis()
}

/// The receipt check a grabber runs, written from the README's description, not from
/// `hongbao`'s code: SHA-256 of `hongbao-shares-v1:<salt>:<c1>,...,<cn>` is the commitment and
/// the shares sum to the total.
fn receipt_holds(commitment: &str, salt: &str, shares: &[i64], total: i64) -> bool {
    let joined: Vec<String> = shares.iter().map(i64::to_string).collect();
    let text = format!("hongbao-shares-v1:{salt}:{}", joined.join(","));
    let digest: String = Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    digest == commitment && shares.iter().sum::<i64>() == total && shares.iter().all(|&c| c >= 1)
}

/// Test: a packet scheduled with `opens_in_secs` is debited at creation, answers every grab
/// before its opening with 425 `not_open_yet` (`Retry-After` the seconds to `opens_at`,
/// rounded up; `opens_at` in the body) and writes nothing, shows `scheduled` and `opens_at`
/// in its view and the sender's history, expires `expires_in_secs` after the opening, and
/// gives shares once open. The grabs before the opening are never remembered as gone by the
/// sandbox: the first grab after it wins.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scheduled_packets_open_on_time() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        common::fund(&store, "alice", 10_000).await;
        let (s, p) = create(
            &store,
            "alice",
            &json!({"total_cents": 300, "count": 1, "opens_in_secs": 3, "expires_in_secs": 60,
                    "cover": "lantern-2027"}),
        )
        .await;
        assert_eq!(s, 201, "{p}");
        let id = p["packet_id"].as_str().unwrap().to_string();
        let (created, opens, expires) = (
            ms(&p["created_at"]),
            ms(&p["opens_at"]),
            ms(&p["expires_at"]),
        );
        assert_eq!((opens - created, expires - opens), (3_000, 60_000), "{p}");
        assert_eq!(p["cover"], "lantern-2027");
        let v = view(&store, &id, "bob").await;
        assert_eq!(
            (v["status"].as_str(), &v["opens_at"]),
            (Some("scheduled"), &p["opens_at"])
        );
        assert!(v.get("reveal").is_none(), "{v}");

        let before = snapshot(&redis).await;
        for user in ["bob", "carol", "bob", "dave"] {
            let (s, b, retry) = grab(&store, &id, user).await;
            assert_eq!((s, b["error"].as_str()), (425, Some("not_open_yet")), "{b}");
            assert_eq!(b["opens_at"], p["opens_at"]);
            let retry: i64 = retry.expect("Retry-After").parse().unwrap();
            assert!((1..=3).contains(&retry), "Retry-After {retry}");
        }
        assert_eq!(
            snapshot(&redis).await,
            before,
            "{backend:?}: a grab before the opening wrote"
        );

        let (_, hist, _) = call(
            &store,
            Function::Grab,
            &with_sub(event("grab-history"), "alice"),
        )
        .await;
        let item = &hist["items"][0];
        assert_eq!(
            (&item["opens_at"], &item["cover"]),
            (&p["opens_at"], &p["cover"]),
            "{hist}"
        );

        common::sleep_until_redis_ms(&store, opens).await;
        let (s, b, _) = grab(&store, &id, "dave").await;
        assert_eq!((s, b["amount_cents"].as_i64()), (200, Some(300)), "{b}");
        let (s, b, _) = grab(&store, &id, "bob").await;
        assert_eq!((s, b["error"].as_str()), (410, Some("sold_out")), "{b}");
        let v = view(&store, &id, "bob").await;
        assert_eq!(v["status"], "sold_out");
    }
}

/// Test: a cover is a well-formed id (1 to 64 of `[A-Za-z0-9_.-]`), one of `HONGBAO_COVERS`
/// when the deployment sets it; a refused cover writes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn covers_are_checked() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = common::store(&redis, |c| {
        c.packets.covers = vec!["gold".into(), "red-2027".into()];
    });
    common::fund(&store, "alice", 10_000).await;
    let before = snapshot(&redis).await;
    for cover in [
        "",
        "a b",
        "x".repeat(65).as_str(),
        "gold/1",
        "silver",
        "\u{3164}",
    ] {
        let (s, b) = create(
            &store,
            "alice",
            &json!({"total_cents": 100, "count": 1, "cover": cover}),
        )
        .await;
        assert_eq!(
            (s, b["error"].as_str()),
            (400, Some("invalid_request")),
            "{cover:?}: {b}"
        );
    }
    assert_eq!(snapshot(&redis).await, before);
    let (s, b) = create(
        &store,
        "alice",
        &json!({"total_cents": 100, "count": 1, "cover": "red-2027"}),
    )
    .await;
    assert_eq!((s, b["cover"].as_str()), (201, Some("red-2027")), "{b}");
    let (s, b) = create(&store, "alice", &json!({"total_cents": 100, "count": 1})).await;
    assert_eq!((s, &b["cover"]), (201, &Value::Null), "{b}");
}

/// Test: for 1,000 packets of random modes and sizes (half sold out by grabs, half expired
/// with some shares left), the view shows `commitment` from creation, no `reveal` while the
/// packet is open, and then a `reveal` whose salt and shares hash to the commitment, sum to
/// the total and hold every grabber's own share at its `share_id`; changing any one share or
/// the salt breaks the check.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn receipts_prove_every_split() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        common::fund(&store, "alice", 10_000_000).await;
        let mut rng = rand::rngs::StdRng::seed_from_u64(32);
        let plans: Vec<(Value, bool)> = (0..1_000)
            .map(|i| {
                let count = rng.random_range(1..=12i64);
                let fixed = rng.random_bool(0.3);
                let total = if fixed {
                    count * rng.random_range(1..=50)
                } else {
                    rng.random_range(count..=600)
                };
                let sell_out = i % 2 == 0;
                let mut body = json!({"total_cents": total, "count": count,
                    "mode": if fixed { "fixed" } else { "lucky" },
                    "expires_in_secs": if sell_out { 600 } else { 4 }});
                if !fixed && rng.random_bool(0.5) {
                    body["split"] = json!("line_cut");
                }
                (body, sell_out)
            })
            .collect();
        let mut packets = Vec::new();
        for chunk in plans.chunks(50) {
            let made = join_all(chunk.iter().map(|(body, sell_out)| {
                let store = store.clone();
                async move {
                    let (s, p) = create(&store, "alice", body).await;
                    assert_eq!(s, 201, "{p}");
                    let id = p["packet_id"].as_str().unwrap().to_string();
                    let count = p["count"].as_i64().unwrap();
                    let grabs = if *sell_out { count } else { count / 2 };
                    let mut mine = Vec::new();
                    for g in 0..grabs {
                        let (s, b, _) = grab(&store, &id, &format!("u{g}")).await;
                        if !*sell_out && s == 410 && b["error"] == "expired" {
                            // A loaded machine took the 4 s of its life already.
                            break;
                        }
                        assert_eq!(s, 200, "{b}");
                        mine.push((
                            b["share_id"].as_i64().unwrap(),
                            b["amount_cents"].as_i64().unwrap(),
                        ));
                    }
                    let v = view(&store, &id, "u0").await;
                    assert_eq!(v["commitment"], p["commitment"]);
                    // Open unless a loaded machine took the 4 s of its life already.
                    let open = v["status"] == "open";
                    if open {
                        assert!(v.get("reveal").is_none(), "revealed while open: {v}");
                    }
                    (p, mine, *sell_out, open)
                }
            }))
            .await;
            packets.extend(made);
        }
        let seen_open = packets
            .iter()
            .filter(|(_, _, sold, open)| !sold && *open)
            .count();
        assert!(seen_open > 0, "{backend:?}: no packet was seen open");
        let latest = packets
            .iter()
            .filter(|(_, _, sold, _)| !sold)
            .map(|(p, _, _, _)| ms(&p["expires_at"]))
            .max()
            .unwrap();
        common::sleep_until_redis_ms(&store, latest).await;
        // Checked expired, then again once reclaim-cron has settled (refunded) them: the
        // reveal outlives the settlement, which keeps the un-grabbed shares' list until the
        // keys expire.
        check_reveals(&store, backend, &packets).await;
        let summary = hongbao::store::reclaim::run(&store).await.unwrap();
        assert!(summary.settled >= 500, "{summary:?}");
        check_reveals(&store, backend, &packets).await;
    }
}

/// A packet the receipt test made: its create answer, its grabs' `(share_id, amount_cents)`,
/// whether it was sold out, and whether its first view saw it open.
type Made = (Value, Vec<(i64, i64)>, bool, bool);

/// Checks every packet's reveal as a grabber would ([`receipts_prove_every_split`]).
async fn check_reveals(store: &Arc<Store>, backend: Backend, packets: &[Made]) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(33);
    for (p, mine, _, _) in packets {
        let id = p["packet_id"].as_str().unwrap();
        let v = view(store, id, "u0").await;
        assert!(
            matches!(
                v["status"].as_str(),
                Some("sold_out" | "expired" | "settled")
            ),
            "{v}"
        );
        {
            let commitment = p["commitment"].as_str().unwrap();
            let salt = v["reveal"]["salt"]
                .as_str()
                .unwrap_or_else(|| panic!("{v}"));
            let shares: Vec<i64> = v["reveal"]["shares_cents"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c.as_i64().unwrap())
                .collect();
            let total = p["total_cents"].as_i64().unwrap();
            assert_eq!(shares.len() as i64, p["count"].as_i64().unwrap());
            assert!(
                receipt_holds(commitment, salt, &shares, total),
                "{backend:?} {v}"
            );
            for (share_id, amount) in mine {
                assert_eq!(shares[*share_id as usize - 1], *amount, "{v}");
            }
            if p["mode"] == "fixed" {
                assert!(shares.iter().all(|&c| c == shares[0]));
            }
            let i = rng.random_range(0..shares.len());
            let mut moved = shares.clone();
            moved[i] += 1;
            assert!(!receipt_holds(commitment, salt, &moved, total + 1));
            if shares.len() > 1 {
                let j = (i + 1) % shares.len();
                let mut shifted = shares.clone();
                shifted[i] += 1;
                shifted[j] -= 1;
                assert!(shifted[j] < 1 || !receipt_holds(commitment, salt, &shifted, total));
            }
            let mut other = salt.to_string().into_bytes();
            other[0] = if other[0] == b'0' { b'1' } else { b'0' };
            assert!(!receipt_holds(
                commitment,
                std::str::from_utf8(&other).unwrap(),
                &shares,
                total
            ));
        }
    }
}

/// `POST /packets/{id}/cancel` by `user`: (status, answer).
async fn cancel(store: &Arc<Store>, id: &str, user: &str) -> (u16, Value) {
    let ev = with_sub(with_packet(event("create-packet-lucky"), id), user);
    let path = format!("/packets/{id}/cancel");
    let mut ev = ev;
    ev["rawPath"] = json!(path);
    ev["requestContext"]["http"]["path"] = json!(path);
    ev["routeKey"] = json!(format!("POST {path}"));
    ev["body"] = Value::Null;
    let (s, b, _) = call(store, Function::CreatePacket, &ev).await;
    (s, b)
}

/// `POST /packets/{id}/claim` by `user`: the status.
async fn claim(store: &Arc<Store>, id: &str, user: &str) -> u16 {
    let (s, b, _) = call(
        store,
        Function::Claim,
        &with_sub(with_packet(event("claim-claim"), id), user),
    )
    .await;
    assert!(s == 200 || s == 410, "{b}");
    s
}

/// A wallet's balance, cents.
async fn balance(store: &Arc<Store>, user: &str) -> i64 {
    hongbao::wallet::balance(store, user).await.unwrap()
}

/// `user`'s journal entries (`XRANGE` of the stream): (id, fields).
async fn journal_entries(store: &Arc<Store>, user: &str) -> Vec<(String, Vec<(String, String)>)> {
    let journal = hongbao::store::keys::Keys::new(&store.config().key_prefix)
        .wallet(user)
        .journal;
    let mut conn = store.conn().await.unwrap();
    redis::cmd("XRANGE")
        .arg(&journal)
        .arg("-")
        .arg("+")
        .query_async(&mut conn)
        .await
        .unwrap()
}

/// The `kind` of each of `user`'s journal entries, oldest first.
async fn journal_kinds(store: &Arc<Store>, user: &str) -> Vec<String> {
    journal_entries(store, user)
        .await
        .iter()
        .filter_map(|(_, f)| f.iter().find(|(k, _)| k == "kind").map(|(_, v)| v.clone()))
        .collect()
}
