//! The replay convention (docs/idempotency.md) per route, through the handlers: a call sent
//! again answers the first call's status and body with `Idempotent-Replayed: true` (the first
//! answer has no such header), and the same key with other parameters is refused 409 with
//! nothing written.
//!
//! One file a feature: red packets and wallets, merchants, the coupon checkout and campaigns.

mod coupons;
mod merchants;
mod money;

use std::sync::Arc;

use harness::{Backend, TestRedis};
use hongbao::api::replay::REPLAYED_HEADER;
use hongbao::Store;
use serde_json::Value;

use crate::common::{self, answer, Function};

/// A store on a fresh standalone server (the convention is the handlers'; the scripts under
/// it are checked on the cluster by their own tests).
fn store() -> (TestRedis, Arc<Store>) {
    let redis = TestRedis::start(Backend::Standalone);
    let store = common::store(&redis, |_| {});
    (redis, store)
}

/// The two answers of one call sent twice: (status, body, replayed) each.
pub(super) struct Twice {
    pub first: (u16, Value, bool),
    pub again: (u16, Value, bool),
}

/// Sends `v` through `f` twice.
async fn send_twice(store: &Arc<Store>, f: Function, v: &Value) -> Twice {
    let one = |(s, b, h): (u16, Value, axum::http::HeaderMap)| {
        let replayed = match h.get(REPLAYED_HEADER) {
            None => false,
            Some(v) if v == "true" => true,
            Some(v) => panic!("{REPLAYED_HEADER}: {v:?}"),
        };
        (s, b, replayed)
    };
    let first = one(answer(store, f, v).await);
    let again = one(answer(store, f, v).await);
    Twice { first, again }
}

/// `body` without its `repeat` field (the one field a replay may change, to `true`).
fn but_repeat(mut body: Value) -> Value {
    if let Some(fields) = body.as_object_mut() {
        fields.remove("repeat");
    }
    body
}

/// The first answer is a success without the header; the second has its status and body
/// (`repeat` aside) and the header.
fn assert_replayed(twice: Twice) {
    let (s1, b1, r1) = twice.first;
    let (s2, b2, r2) = twice.again;
    assert!((200..300).contains(&s1), "{s1} {b1}");
    assert!(!r1, "the first answer is not a replay");
    assert_eq!((s2, r2), (s1, true), "{b2}");
    assert_eq!(but_repeat(b2), but_repeat(b1));
}
