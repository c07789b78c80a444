//! The abuse quotas at their production defaults.

use std::sync::Arc;

use harness::{Backend, TestRedis};
use hongbao::Store;
use serde_json::json;

use super::{deposit, snapshot_but_reclaim_index};
use crate::common::{self, call, event, snapshot, with_body, with_sub, Function};

/// The abuse quotas at their production defaults, standalone and cluster: a sender's
/// 11th packet in a minute (`HONGBAO_PACKETS_PER_MINUTE` = 10), a user's order codes past 500
/// a day (`HONGBAO_ORDER_CODES_PER_USER_PER_DAY`) and a poster's 21st article in 24 h
/// (`HONGBAO_VOTE_ARTICLES_PER_DAY`) are 429 + `Retry-After` with nothing written (DUMP of
/// every key before and after), while another user is unaffected; an article's 17th group
/// (`HONGBAO_VOTE_MAX_GROUPS_PER_ARTICLE`) is 409 `too_many_groups`, nothing written, and a
/// request may name at most 16 groups per list. (Before, one user took all 90,000 codes of a
/// day in 0.6 s, and an article collected 64 groups.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abuse_quotas() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let defaults = hongbao::Config::default();
        let store = common::store(&redis, |c| {
            c.packets.packets_per_minute = defaults.packets.packets_per_minute;
            c.order_codes.per_user_per_day = defaults.order_codes.per_user_per_day;
            c.voting.articles_per_day = defaults.voting.articles_per_day;
        });
        assert_eq!(store.config().voting.articles_per_day, 20);
        assert_eq!(store.config().voting.max_groups_per_article, 16);
        assert_eq!(store.config().packets.packets_per_minute, 10);
        assert_eq!(store.config().order_codes.per_user_per_day, 500);
        assert_eq!(deposit(&store, "spammer", 10_000, "seed").await.0, 201);
        assert_eq!(deposit(&store, "other", 10_000, "seed").await.0, 201);
        let label = format!("{backend:?}");
        packets_per_minute(&store, &redis, &label).await;
        order_codes_per_day(&store, &redis, &label).await;
        let first = articles_per_day(&store, &redis, &label).await;
        groups_per_article(&store, &redis, &label, &first).await;
    }
}

/// A sender's 11th packet in a minute is 429 + `Retry-After`, nothing written; another
/// sender's is created.
async fn packets_per_minute(store: &Arc<Store>, redis: &TestRedis, backend: &str) {
    let create = |who: &str| {
        with_sub(
            with_body(
                event("create-packet-lucky"),
                r#"{"total_cents":1,"count":1}"#,
            ),
            who,
        )
    };
    for i in 0..10 {
        let (s, b, _) = call(store, Function::CreatePacket, &create("spammer")).await;
        assert_eq!(s, 201, "{backend} create {i}: {b}");
    }
    let before = snapshot_but_reclaim_index(redis).await;
    let (s, b, retry) = call(store, Function::CreatePacket, &create("spammer")).await;
    assert_eq!((s, b["error"].as_str()), (429, Some("rate_limited")), "{b}");
    let retry: u64 = retry.expect("Retry-After").parse().unwrap();
    assert!((1..=60).contains(&retry), "{retry}");
    assert_eq!(
        snapshot_but_reclaim_index(redis).await,
        before,
        "{backend}: a refused create wrote"
    );
    let (s, b, _) = call(store, Function::CreatePacket, &create("other")).await;
    assert_eq!(s, 201, "{backend} another sender: {b}");
}

/// A user's order codes past 500 a day are 429 + `Retry-After`, nothing written; another
/// user's are given.
async fn order_codes_per_day(store: &Arc<Store>, redis: &TestRedis, backend: &str) {
    let codes = |who: &str, n: u32| {
        with_sub(
            with_body(
                event("next-order-code-batch"),
                &format!(r#"{{"count":{n}}}"#),
            ),
            who,
        )
    };
    for _ in 0..5 {
        let (s, b, _) = call(store, Function::NextOrderCode, &codes("spammer", 100)).await;
        assert_eq!(s, 201, "{backend}: {b}");
    }
    let before = snapshot(redis).await;
    let (s, b, retry) = call(store, Function::NextOrderCode, &codes("spammer", 1)).await;
    assert_eq!((s, b["error"].as_str()), (429, Some("rate_limited")), "{b}");
    assert!(b["date"].is_string(), "{b}");
    let retry: u64 = retry.expect("Retry-After").parse().unwrap();
    assert!((1..=86_400).contains(&retry), "{retry}");
    assert_eq!(
        snapshot(redis).await,
        before,
        "{backend}: a refused order code wrote"
    );
    let (s, b, _) = call(store, Function::NextOrderCode, &codes("other", 100)).await;
    assert_eq!(s, 201, "{backend} another user: {b}");
}

/// Articles: 20 a day per poster; the 21st is 429 + `Retry-After`, nothing written; another
/// poster's is posted. Returns the spammer's first article.
async fn articles_per_day(store: &Arc<Store>, redis: &TestRedis, backend: &str) -> String {
    let post = |who: &str| {
        with_sub(
            with_body(
                event("vote-post-article"),
                r#"{"title":"spam","link":"https://example.com/"}"#,
            ),
            who,
        )
    };
    let mut first = String::new();
    for i in 0..20 {
        let (s, b, _) = call(store, Function::Vote, &post("spammer")).await;
        assert_eq!(s, 201, "{backend} post {i}: {b}");
        if i == 0 {
            first = b["article_id"].as_str().unwrap().to_string();
        }
    }
    let before = snapshot(redis).await;
    let (s, b, retry) = call(store, Function::Vote, &post("spammer")).await;
    assert_eq!((s, b["error"].as_str()), (429, Some("rate_limited")), "{b}");
    let retry: u64 = retry.expect("Retry-After").parse().unwrap();
    assert!((1..=86_400).contains(&retry), "{retry}");
    assert_eq!(
        snapshot(redis).await,
        before,
        "{backend}: a refused post wrote"
    );
    let (s, b, _) = call(store, Function::Vote, &post("other")).await;
    assert_eq!(s, 201, "{backend} another poster: {b}");
    first
}

/// Groups: at most 16 per article `first`, whatever the number of requests; a request names
/// at most 16 per list.
async fn groups_per_article(store: &Arc<Store>, redis: &TestRedis, backend: &str, first: &str) {
    let groups = |body: String| {
        let ev = event("vote-groups")
            .to_string()
            .replace("ARTICLE_ID", first);
        with_sub(
            with_body(serde_json::from_str(&ev).unwrap(), &body),
            "spammer",
        )
    };
    let names = |from: usize, n: usize| -> Vec<String> {
        (from..from + n).map(|i| format!("g{i}")).collect()
    };
    let (s, b, _) = call(
        store,
        Function::Vote,
        &groups(json!({"add": names(0, 17)}).to_string()),
    )
    .await;
    assert_eq!(
        (s, b["error"].as_str()),
        (400, Some("invalid_request")),
        "{b}"
    );
    for half in [0, 8] {
        let (s, b, _) = call(
            store,
            Function::Vote,
            &groups(json!({"add": names(half, 8)}).to_string()),
        )
        .await;
        assert_eq!(s, 200, "{backend}: {b}");
    }
    let before = common::snapshot_but_call_answers(redis).await;
    let (s, b, _) = call(
        store,
        Function::Vote,
        &groups(json!({"add": names(16, 1)}).to_string()),
    )
    .await;
    assert_eq!(
        (s, b["error"].as_str(), b["limit"].as_i64()),
        (409, Some("too_many_groups"), Some(16)),
        "{b}"
    );
    assert_eq!(
        common::snapshot_but_call_answers(redis).await,
        before,
        "{backend}: a refused change wrote (more than its answer under its call id)"
    );
    // A swap keeps the count: allowed; re-adding a present group too.
    let (s, b, _) = call(
        store,
        Function::Vote,
        &groups(json!({"add": names(16, 1), "remove": names(0, 1)}).to_string()),
    )
    .await;
    assert_eq!(s, 200, "{backend}: {b}");
    let (s, b, _) = call(
        store,
        Function::Vote,
        &groups(json!({"add": names(1, 15)}).to_string()),
    )
    .await;
    assert_eq!(
        (s, b["groups"].as_array().map(Vec::len)),
        (200, Some(16)),
        "{b}"
    );
}
