//! Daily order codes (`POST /order-codes`, `hongbao::order_codes`, `order_code.lua`)
//! against real `redis-server` processes: every test runs on a standalone server and on a
//! 3-master cluster started by the harness.
//!
//! Day rollovers and DST changes are driven through the script's own text: [`script_at`] is a
//! copy of `order_code.lua` whose single `redis.call('TIME')` is replaced by a literal
//! instant. Everything else (the zone window, the keys, the day decision, the counter, the
//! secret, the permutation) is the production code path, `order_codes::next_codes_with`; the
//! production script itself has no clock input and is exercised through the handler tests.
//!
//! One file a topic: a day's codes, clocks, the HTTP contract.

mod clock;
mod days;
mod handler;

use std::sync::Arc;

use harness::TestRedis;
use hongbao::order_codes::{self, Outcome};
use hongbao::{Error, Store};
use redis::Script;
use serde_json::Value;

use crate::common::{self};

/// The production script's text (`lua/quota.lua` + `order_code.lua`).
fn source() -> &'static str {
    hongbao::store::scripts::ORDER_CODE.source()
}

/// `order_code.lua` with Redis `TIME` replaced by `unix_s` seconds and `micros`
/// microseconds.
fn script_at(unix_s: i64, micros: u32) -> Script {
    assert_eq!(
        source().matches("redis.call('TIME')").count(),
        1,
        "one clock read in the script"
    );
    Script::new(&source().replacen(
        "redis.call('TIME')",
        &format!("{{'{unix_s}', '{micros}'}}"),
        1,
    ))
}

/// Unix seconds of the UTC civil time `y-m-d hh:mm:ss` (days_from_civil, H. Hinnant), written
/// here independently of the code under test.
const fn unix(y: i64, m: i64, d: i64, hh: i64, mm: i64, ss: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    (era * 146_097 + doe - 719_468) * 86_400 + hh * 3600 + mm * 60 + ss
}

/// A store on `redis` for order codes in zone `tz` under key prefix `prefix`. Replies may take
/// up to 5 s (production: 1 s): the suites race 200 first requests, each a `NOSCRIPT` answered
/// by an `EVAL` of the test copy of the script, while the other tests of the binary start
/// clusters on the same 2 cores; a timeout there (seen once on Valkey 8) says nothing about codes.
fn order_store(redis: &TestRedis, prefix: &str, tz: &str) -> Arc<Store> {
    common::store(redis, |c| {
        c.response_timeout = std::time::Duration::from_secs(5);
        c.key_prefix = prefix.to_string();
        c.order_codes.tz = tz.parse().expect("IANA zone");
    })
}

/// Takes `count` codes with Redis `TIME` = `at` (`micros` µs into the second) and the
/// function's clock at `around`.
async fn take_at(
    store: &Store,
    count: u32,
    at: i64,
    micros: u32,
    around: i64,
) -> Result<Outcome, Error> {
    order_codes::next_codes_with(store, &script_at(at, micros), "tester", count, around).await
}

/// The codes of an outcome that must be `Issued` for `date`.
fn issued(outcome: Result<Outcome, Error>, date: &str) -> Vec<String> {
    match outcome {
        Ok(Outcome::Issued { date: d, codes }) if d.to_string() == date => codes,
        other => panic!("expected codes of {date}, got {other:?}"),
    }
}

/// The day hash of `yyyymmdd` as (secret, positions taken); `None` when it does not exist.
async fn day_state(redis: &TestRedis, prefix: &str, yyyymmdd: &str) -> Option<(String, u64)> {
    let mut conn = redis.raw_conn().await;
    let fields: Vec<(String, u64)> = redis::cmd("HGETALL")
        .arg(format!("{prefix}:{{oc}}:day:{yyyymmdd}"))
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(fields.len() <= 1, "a day hash has one field: {fields:?}");
    fields.into_iter().next()
}

/// The secret of day `yyyymmdd`.
async fn secret(redis: &TestRedis, prefix: &str, yyyymmdd: &str) -> String {
    day_state(redis, prefix, yyyymmdd)
        .await
        .expect("day hash")
        .0
}

/// Positions taken so far on day `yyyymmdd`.
async fn taken(redis: &TestRedis, prefix: &str, yyyymmdd: &str) -> u64 {
    day_state(redis, prefix, yyyymmdd)
        .await
        .map_or(0, |(_, n)| n)
}

/// Sets the positions taken on day `yyyymmdd` (the day hash must exist).
async fn set_taken(redis: &TestRedis, prefix: &str, yyyymmdd: &str, n: u64) {
    let s = secret(redis, prefix, yyyymmdd).await;
    let mut conn = redis.raw_conn().await;
    let key = format!("{prefix}:{{oc}}:day:{yyyymmdd}");
    let _: () = redis::cmd("HSET")
        .arg(key)
        .arg(s)
        .arg(n)
        .query_async(&mut conn)
        .await
        .unwrap();
}

/// The suffix (last 5 digits) of an 11-digit code as a number.
fn suffix(code: &str) -> u64 {
    code[6..].parse().unwrap()
}

/// Adjacent pairs `(a, b)` of `xs` with `a < b`.
fn ascending_pairs(xs: &[u64]) -> usize {
    xs.windows(2).filter(|w| w[0] < w[1]).count()
}

/// The business days (`yyyymmdd`) that have a day hash under prefix `hb`, ascending.
async fn day_hashes(redis: &TestRedis) -> Vec<String> {
    let mut days: Vec<String> = redis
        .all_keys()
        .await
        .into_iter()
        .filter_map(|k| k.strip_prefix("hb:{oc}:day:").map(str::to_string))
        .collect();
    days.sort();
    days
}

/// Sends `v` through the next-order-code function's router; returns (status, JSON body,
/// Retry-After).
async fn call(store: &Arc<Store>, v: &Value) -> (u16, Value, Option<String>) {
    common::call(store, common::Function::NextOrderCode, v).await
}

/// Redis `TIME` in Unix seconds.
async fn redis_now(redis: &TestRedis) -> i64 {
    let mut conn = redis.raw_conn().await;
    let (s, _us): (i64, i64) = redis::cmd("TIME").query_async(&mut conn).await.unwrap();
    s
}

/// Replaces the day hash `key` by one field: `secret` with `taken` positions taken (the day as
/// another server behind the same URL left it).
async fn replace_day(redis: &TestRedis, key: &str, secret: &str, taken: u64) {
    let mut conn = redis.raw_conn().await;
    let _: () = redis::cmd("DEL")
        .arg(key)
        .query_async(&mut conn)
        .await
        .unwrap();
    let _: () = redis::cmd("HSET")
        .arg(key)
        .arg(secret)
        .arg(taken)
        .query_async(&mut conn)
        .await
        .unwrap();
}
