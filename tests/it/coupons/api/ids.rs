//! Campaign ids no one can guess: a campaign's public id is its number's 5 characters and a
//! tag of 80 bits derived from its secret, so knowing one campaign's id (or five) tells nothing
//! of the next one's, and the number alone finds nothing.

use harness::{Backend, TestRedis};
use serde_json::json;

use super::{create, uploaded, view};
use crate::coupons::{coupon_store, redis_ms};

/// Five campaigns created one after the other: their ids.
async fn five_ids(store: &std::sync::Arc<hongbao::Store>) -> Vec<String> {
    let now = redis_ms(store).await;
    let mut ids = Vec::new();
    for n in 0..5 {
        let codes = vec![format!("ID-{n}-0001")];
        let (s, c) = create(store, &uploaded(now, &codes, 600_000, &format!("ids-{n}"))).await;
        assert_eq!(s, 201, "{c}");
        ids.push(c["campaign_id"].as_str().unwrap().to_string());
    }
    ids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_campaigns_id_is_not_found_from_its_number_or_another_tag() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = coupon_store(&redis, |_| {});
    let ids = five_ids(&store).await;

    let (whole, _) = view(&store, &ids[4], "u1").await;
    let (number_alone, b) = view(&store, &ids[4][..5], "u1").await;
    let (next_tag, _) = view(&store, &format!("{}{}", &ids[4][..5], &ids[3][5..]), "u1").await;

    assert_eq!((whole, number_alone, next_tag), (200, 404, 404), "{b}");
    assert_eq!(b["error"], json!("not_found"));
    let numbers: Vec<&str> = ids.iter().map(|id| &id[..5]).collect();
    assert_eq!(
        numbers,
        ["00001", "00002", "00003", "00004", "00005"],
        "{ids:?}"
    );
    let tags: std::collections::HashSet<&str> = ids.iter().map(|id| &id[5..]).collect();
    assert_eq!((tags.len(), ids[0].len()), (5, 21), "{ids:?}");
}
