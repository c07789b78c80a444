//! Coupon drops' scripts (`coupon_create_pool.lua`, `coupon_grab.lua`,
//! `coupon_redeem.lua`, the checkout's `coupon_hold.lua` and `coupon_release.lua`)
//! through their typed calls, against real `redis-server` processes: every test runs on a
//! standalone server and on a 3-master cluster started by the harness. One pool first;
//! campaigns of many pools build on these steps. One file a topic: one pool, campaigns,
//! campaigns of many pools, the checkout, and the API (`api/`).

pub(crate) mod api;
mod campaigns;
mod checkout;
mod paused;
mod pool;
mod pools;
mod reruns;
mod retries;

use std::collections::BTreeMap;

use harness::TestRedis;
use hongbao::coupons::rules::{campaign_id, CodeSource, NewCampaign};
use hongbao::coupons::PoolKeys;
use hongbao::store::scripts::{text, Call, CouponCreatePoolCall, CouponGrabCall, CouponRedeemCall};
use hongbao::Store;

use crate::common::{self};

/// A store on `redis` for the coupon suites. Replies may take up to 10 s (production: 1 s): a
/// storm here puts 1,600 scripts on one multiplexed connection at once, each reply queued
/// behind the others, while the binary's other tests start clusters on the same 2 cores; a
/// timeout there (seen once in CI) says nothing about coupons.
pub(crate) fn coupon_store(
    redis: &TestRedis,
    tweak: impl FnOnce(&mut hongbao::store::Config),
) -> std::sync::Arc<Store> {
    common::store(redis, |c| {
        c.response_timeout = std::time::Duration::from_secs(10);
        tweak(c);
    })
}

const SECRET: &str = "0f1e2d3c4b5a69788796a5b4c3d2e1f0";

/// Redis `TIME` in Unix ms.
pub(crate) async fn redis_ms(store: &Store) -> i64 {
    let mut conn = store.conn().await.unwrap();
    let (s, us): (i64, i64) = redis::cmd("TIME").query_async(&mut conn).await.unwrap();
    s * 1000 + us / 1000
}

/// A pool's shape for [`create`].
struct Pool<'a> {
    starts_at_ms: i64,
    ends_at_ms: i64,
    per_user: u32,
    generated: Option<(u64, u64)>,
    codes: &'a [&'a str],
    fingerprint: &'a str,
}

impl Pool<'_> {
    /// A pool of the generated indices `0..n`, `per_user` each, open from one second before
    /// `now` for ten minutes.
    fn generated(now: i64, per_user: u32, n: u64, fingerprint: &'static str) -> Pool<'static> {
        Pool {
            starts_at_ms: now - 1_000,
            ends_at_ms: now + 600_000,
            per_user,
            generated: Some((0, n)),
            codes: &[],
            fingerprint,
        }
    }
}

/// Writes pool 0 of campaign number `no` (one pool); the script's answer.
async fn create(store: &Store, no: u64, p: &Pool<'_>) -> String {
    let keys = PoolKeys::new("hb", &campaign_id(no), no, 0, 1);
    let (first, end) = p.generated.unwrap_or((0, 0));
    let reply = CouponCreatePoolCall {
        pool: &keys.pool,
        codes: &keys.codes,
        fingerprint: p.fingerprint,
        title: "20 off 100",
        starts_at_ms: p.starts_at_ms,
        ends_at_ms: p.ends_at_ms,
        redeem_by_ms: p.ends_at_ms + 60_000,
        per_user: p.per_user,
        pools: 1,
        kind: if p.generated.is_some() {
            "generated"
        } else {
            "uploaded"
        },
        first_index: first,
        end_index: end,
        secret: if p.generated.is_some() { SECRET } else { "" },
        campaign_total: p.generated.map_or(p.codes.len() as u64, |(a, b)| b - a),
        id_tag: "",
        batch: p.codes,
        ..Default::default()
    }
    .invocation()
    .invoke_async(&mut store.conn().await.unwrap())
    .await
    .unwrap();
    text("coupon_create_pool", reply).unwrap()
}

/// One grab of pool 0 of campaign `no` by `user` (visit limit `limit` per minute).
async fn grab(store: &Store, no: u64, user: &str, limit: u32) -> String {
    grab_call(
        store,
        no,
        user,
        limit,
        &format!("{:016x}", rand::random::<u64>()),
    )
    .await
}

/// One grab call of `user` in pool 0 of campaign `no` with call id `call` (a resend of the
/// same call carries the same id).
async fn grab_call(store: &Store, no: u64, user: &str, limit: u32, call: &str) -> String {
    let keys = PoolKeys::new("hb", &campaign_id(no), no, 0, 1);
    let reply = CouponGrabCall {
        pool: &keys.pool,
        codes: &keys.codes,
        issued: &keys.issued,
        issued_by_time: &keys.issued_by_time,
        holders: &keys.holders,
        rate: &keys.visits(user),
        pending: &keys.pending,
        journal: &keys.journal,
        user_id: user,
        home: 0,
        rate_limit: limit,
        rate_window_ms: 60_000,
        reservation: call,
        campaign_id: &campaign_id(no),
    }
    .invocation()
    .invoke_async(&mut store.conn().await.unwrap())
    .await
    .unwrap();
    text("coupon_grab", reply).unwrap()
}

/// One redeem of `code` (as the pool keys it) of campaign `no`.
async fn redeem(store: &Store, no: u64, code: &str, user: &str, order: &str) -> String {
    let keys = PoolKeys::new("hb", &campaign_id(no), no, 0, 1);
    let call = format!("{:016x}", rand::random::<u64>());
    let answer = hongbao::store::keys::Keys::call_answer(&keys.issued, &call);
    let reply = CouponRedeemCall {
        pool: &keys.pool,
        issued: &keys.issued,
        journal: &keys.journal,
        books: &keys.pool,
        grabs: &keys.pool,
        call_answer: &answer,
        code,
        user_id: user,
        order_reference: order,
        campaign_id: &campaign_id(no),
        call: &call,
        call_keep_ms: 60_000,
        ..Default::default()
    }
    .invocation()
    .invoke_async(&mut store.conn().await.unwrap())
    .await
    .unwrap();
    text("coupon_redeem", reply).unwrap()
}

/// Every key with its type, contents (a hash's fields sorted) and whether it has a TTL, to
/// show that a refused step wrote nothing. Not `DUMP`: a hash with a field value over 64 bytes
/// (a fingerprint) is a hashtable, whose serialized order moves with incremental rehashing,
/// which a read (`HGET`) can advance.
pub(crate) async fn dump_all(
    redis: &TestRedis,
    store: &Store,
) -> BTreeMap<String, (String, Vec<String>, bool)> {
    let mut conn = store.conn().await.unwrap();
    let mut out = BTreeMap::new();
    for key in redis.all_keys().await {
        let (kind, items) = common::key_content(store, &key).await;
        let ttl: i64 = redis::cmd("PTTL")
            .arg(&key)
            .query_async(&mut conn)
            .await
            .unwrap();
        out.insert(key, (kind, items, ttl > 0));
    }
    out
}

/// The visit limit off (0 visits a window: every grab is answered, none refused 429).
pub(crate) const NO_VISIT_LIMIT: hongbao::coupons::rules::VisitLimit =
    hongbao::coupons::rules::VisitLimit {
        per_window: 0,
        window_ms: 1_000,
    };

/// A campaign request: `source` codes, open from one second ago for ten minutes.
pub(crate) fn campaign(now: i64, reference: &str, source: CodeSource) -> NewCampaign {
    NewCampaign {
        starts_at_ms: Some(now - 1_000),
        redeem_by_ms: now + 1_200_000,
        ..NewCampaign::new("20 off 100", source, now + 600_000, reference)
    }
}
