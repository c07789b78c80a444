//! Cancelling a packet: raced by its grabbers, repeated, refused to others, settled at expiry.

use std::sync::Arc;

use futures::future::join_all;
use harness::{Backend, TestRedis};
use hongbao::Store;
use serde_json::{json, Value};

use super::{
    balance, cancel, claim, create, grab, journal_kinds, ms, receipt_holds, revealed_shares, view,
};
use crate::common::{self, snapshot};

/// Test: the sender cancels a packet while 200 grabbers race for it: every share is either
/// grabbed (and claimable until `expires_at`) or refunded at the cancel, never both and never
/// neither; the cancel's refund is exactly the un-grabbed shares of the reveal; a repeat
/// answers the same figures and moves nothing; anyone else is refused; later grabs are 410
/// `cancelled`; claims after the cancel succeed; at expiry reclaim-cron refunds the unclaimed
/// grabbed shares, so the two refunds add up to what nobody claimed, money is conserved, and
/// the journal holds one `packet_cancelled` entry. A sold-out, expired or settled packet is
/// not cancellable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_races_grabs() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        common::fund(&store, "alice", 100_000).await;
        let (s, p) = create(
            &store,
            "alice",
            // 15 s: the race, the checks and half the claims must land before expiry, also on
            // a loaded machine; reclaim-cron runs after it.
            &json!({"total_cents": 20_000, "count": 300, "expires_in_secs": 15}),
        )
        .await;
        assert_eq!(s, 201, "{p}");
        let id = p["packet_id"].as_str().unwrap().to_string();
        let (won, answer) = two_hundred_grabbers_and_a_cancel(&store, &id).await;
        let grabbed: i64 = won.iter().map(|(_, c)| c).sum();
        the_refund_is_the_ungrabbed_shares(&store, &p, &won, &answer, backend).await;
        a_repeat_moves_nothing_and_others_are_refused(&store, &id, &answer).await;
        let claimed = claims_after_the_cancel_then_reclaim(&store, &p, &won, grabbed).await;
        let mut wallets = balance(&store, "alice").await;
        for (g, _) in &won {
            wallets += balance(&store, &format!("g{g}")).await;
        }
        assert_eq!(wallets, 100_000, "{backend:?}: money not conserved");
        assert_eq!(balance(&store, "alice").await, 100_000 - claimed);
        // The repeat after settlement still answers the cancel's figures.
        assert_eq!(cancel(&store, &id, "alice").await, (200, answer));
        let kinds = journal_kinds(&store, "alice").await;
        assert_eq!(
            kinds.iter().filter(|k| *k == "packet_cancelled").count(),
            1,
            "{kinds:?}"
        );
        not_cancellable(&store, &redis, backend).await;
    }
}

/// 200 tasks race: the 100th cancels as alice, the others grab as `g<n>` (200, or 410
/// `cancelled`). Returns the winners' (n, cents) and the cancel's answer.
async fn two_hundred_grabbers_and_a_cancel(
    store: &Arc<Store>,
    id: &str,
) -> (Vec<(usize, i64)>, Value) {
    let grabs = (0..200).map(|g| {
        let (store, id) = (store.clone(), id.to_string());
        tokio::spawn(async move {
            if g == 100 {
                let (s, b) = cancel(&store, &id, "alice").await;
                assert_eq!(s, 200, "{b}");
                return (g, 0, Some(b));
            }
            let (s, b, _) = grab(&store, &id, &format!("g{g}")).await;
            match (s, b["error"].as_str()) {
                (200, None) => (g, b["amount_cents"].as_i64().unwrap(), None),
                (410, Some("cancelled")) => (g, 0, None),
                other => panic!("{other:?} {b}"),
            }
        })
    });
    let mut won = Vec::new();
    let mut cancelled = None;
    for r in join_all(grabs).await {
        let (g, cents, answer) = r.unwrap();
        if let Some(a) = answer {
            cancelled = Some(a);
        } else if cents > 0 {
            won.push((g, cents));
        }
    }
    (won, cancelled.unwrap())
}

/// Every share grabbed or refunded, never both; the refund is the reveal's un-grabbed shares,
/// and the reveal holds against the create's commitment.
async fn the_refund_is_the_ungrabbed_shares(
    store: &Arc<Store>,
    p: &Value,
    won: &[(usize, i64)],
    answer: &Value,
    backend: Backend,
) {
    let id = p["packet_id"].as_str().unwrap();
    let refunded = answer["refunded_cents"].as_i64().unwrap();
    assert_eq!(answer["status"], "cancelled");
    let grabbed: i64 = won.iter().map(|(_, c)| c).sum();
    assert_eq!(
        grabbed + refunded,
        20_000,
        "{backend:?}: a share both or neither"
    );
    assert_eq!(balance(store, "alice").await, 80_000 + refunded);
    let v = view(store, id, "alice").await;
    assert_eq!(
        (v["status"].as_str(), v["grabbed_count"].as_u64()),
        (Some("cancelled"), Some(won.len() as u64)),
        "{v}"
    );
    let shares = revealed_shares(store, id, "alice").await;
    assert_eq!(shares.len(), 300);
    assert_eq!(shares[won.len()..].iter().sum::<i64>(), refunded);
    assert!(receipt_holds(
        p["commitment"].as_str().unwrap(),
        v["reveal"]["salt"].as_str().unwrap(),
        &shares,
        20_000
    ));
}

/// A repeat: the same figures, nothing moved; nobody else may cancel (another user, and one
/// whose wallet shares alice's hash tag: the script tells them apart by id); no more grabs.
async fn a_repeat_moves_nothing_and_others_are_refused(
    store: &Arc<Store>,
    id: &str,
    answer: &Value,
) {
    let refunded = answer["refunded_cents"].as_i64().unwrap();
    assert_eq!(cancel(store, id, "alice").await, (200, answer.clone()));
    assert_eq!(balance(store, "alice").await, 80_000 + refunded);
    let tag = hongbao::store::keys::user_tag("alice");
    let twin = (0..)
        .map(|i| format!("twin-{i}"))
        .find(|u| hongbao::store::keys::user_tag(u) == tag)
        .unwrap();
    for other in ["g1", twin.as_str()] {
        let (s, b) = cancel(store, id, other).await;
        assert_eq!(
            (s, b["error"].as_str()),
            (403, Some("forbidden")),
            "{other}: {b}"
        );
    }
    let (s, b, _) = grab(store, id, "late").await;
    assert_eq!((s, b["error"].as_str()), (410, Some("cancelled")), "{b}");
}

/// Half the winners claim after the cancel; at expiry reclaim-cron refunds the other half's
/// shares and the packet is settled. Returns the cents claimed.
async fn claims_after_the_cancel_then_reclaim(
    store: &Arc<Store>,
    p: &Value,
    won: &[(usize, i64)],
    grabbed: i64,
) -> i64 {
    let id = p["packet_id"].as_str().unwrap();
    let mut claimed = 0;
    for (g, cents) in won.iter().step_by(2) {
        assert_eq!(claim(store, id, &format!("g{g}")).await, 200);
        claimed += cents;
    }
    common::sleep_until_redis_ms(store, ms(&p["expires_at"])).await;
    let summary = hongbao::store::reclaim::run(store).await.unwrap();
    assert_eq!(summary.refunded_cents, grabbed - claimed, "{summary:?}");
    let v = view(store, id, "alice").await;
    assert_eq!(
        (v["status"].as_str(), v["refunded_cents"].as_i64()),
        (Some("settled"), Some(20_000 - claimed)),
        "{v}"
    );
    claimed
}

/// Not cancellable: sold out, expired (409 `not_cancellable`, nothing written), settled; an
/// unknown packet is 404.
async fn not_cancellable(store: &Arc<Store>, redis: &TestRedis, backend: Backend) {
    let (_, sold) = create(store, "alice", &json!({"total_cents": 100, "count": 1})).await;
    let sold = sold["packet_id"].as_str().unwrap().to_string();
    assert_eq!(grab(store, &sold, "bob").await.0, 200);
    let (_, gone) = create(
        store,
        "alice",
        &json!({"total_cents": 100, "count": 2, "expires_in_secs": 1}),
    )
    .await;
    let gone_id = gone["packet_id"].as_str().unwrap().to_string();
    common::sleep_until_redis_ms(store, ms(&gone["expires_at"])).await;
    let before = snapshot(redis).await;
    for (packet, status) in [(&sold, "sold_out"), (&gone_id, "expired")] {
        let (s, b) = cancel(store, packet, "alice").await;
        assert_eq!(
            (s, b["error"].as_str(), b["status"].as_str()),
            (409, Some("not_cancellable"), Some(status)),
            "{b}"
        );
    }
    assert_eq!(
        snapshot(redis).await,
        before,
        "{backend:?}: a refused cancel wrote"
    );
    hongbao::store::reclaim::run(store).await.unwrap();
    let (s, b) = cancel(store, &gone_id, "alice").await;
    assert_eq!((s, b["status"].as_str()), (409, Some("settled")), "{b}");
    let (s, b) = cancel(store, "ffffffffffffffffffffffff", "alice").await;
    assert_eq!((s, b["error"].as_str()), (404, Some("not_found")), "{b}");
}
