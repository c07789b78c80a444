//! The bench's Redis helpers: plain node connections, `INFO` and `MEMORY USAGE` reads, key
//! scans, and campaigns created through the store.

use std::collections::BTreeMap;
use std::time::Duration;

use hongbao::coupons;
use hongbao::coupons::rules::codes::MAX_CODES_PER_BATCH;
use hongbao::coupons::rules::{CodeSource, NewCampaign};
use hongbao::coupons::{keys, AddCodesOutcome, CampaignCreateOutcome, Created};
use hongbao::store::scripts;
use hongbao::{Config, Store};
use redis::aio::ConnectionLike;

use crate::support::{info_field, query, server_main_thread_cpu_secs};
use crate::PER_USER;

/// Redis `TIME` in Unix ms.
pub async fn redis_ms(conn: &mut impl ConnectionLike) -> i64 {
    let (s, us): (i64, i64) = query(conn, &["TIME"]).await;
    s * 1000 + us / 1000
}

/// The server's main-thread CPU so far, seconds (`INFO cpu`).
pub async fn main_cpu(conn: &mut impl ConnectionLike) -> f64 {
    let info: String = query(conn, &["INFO", "cpu"]).await;
    server_main_thread_cpu_secs(&info).0
}

/// `INFO memory` `used_memory`, bytes.
pub async fn used_memory(conn: &mut impl ConnectionLike) -> f64 {
    let info: String = query(conn, &["INFO", "memory"]).await;
    info_field(&info, "used_memory", None)
}

/// `(calls, usec)` of every command in `INFO commandstats` (subcommands as `config|get`).
pub async fn commandstats(conn: &mut impl ConnectionLike) -> BTreeMap<String, (u64, f64)> {
    let info: String = query(conn, &["INFO", "commandstats"]).await;
    info.lines()
        .filter_map(|l| {
            let (name, rest) = l.strip_prefix("cmdstat_")?.split_once(':')?;
            let field = |f: &str| {
                rest.split(',')
                    .find_map(|kv| kv.strip_prefix(f)?.strip_prefix('='))
                    .and_then(|v| v.trim().parse::<f64>().ok())
            };
            Some((name.to_string(), (field("calls")? as u64, field("usec")?)))
        })
        .collect()
}

/// `MEMORY USAGE <key> SAMPLES 0` of each of `keys` (0 for a key that is gone).
pub async fn memory_usage(conn: &mut impl ConnectionLike, keys: &[String]) -> Vec<u64> {
    let mut out = Vec::with_capacity(keys.len());
    for chunk in keys.chunks(500) {
        let mut pipe = redis::pipe();
        for k in chunk {
            pipe.cmd("MEMORY").arg("USAGE").arg(k).arg("SAMPLES").arg(0);
        }
        let sizes: Vec<Option<u64>> = pipe.query_async(conn).await.expect("MEMORY USAGE");
        out.extend(sizes.into_iter().map(Option::unwrap_or_default));
    }
    out
}

/// Every key of a standalone server (`SCAN`).
pub async fn all_keys(conn: &mut impl ConnectionLike) -> Vec<String> {
    let mut keys = Vec::new();
    let mut cursor = 0u64;
    loop {
        let (next, batch): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("COUNT")
            .arg(1000)
            .query_async(conn)
            .await
            .expect("SCAN");
        keys.extend(batch);
        if next == 0 {
            return keys;
        }
        cursor = next;
    }
}
/// The production default configuration on `url`.
pub fn config(url: String, cluster: bool) -> Config {
    Config {
        redis_url: url,
        redis_cluster: cluster,
        ..Config::default()
    }
}

/// Uploaded code `i` of the codes marked `tag`: `<tag>-` and 8 hex digits of a bijection of
/// `i` (distinct for distinct `i`), like a printed voucher code.
pub fn code(tag: &str, i: u64) -> String {
    let x = (i as u32).wrapping_mul(0x9E37_79B1) ^ 0x5BD1_E995;
    format!("{tag}-{x:08X}")
}

/// `n` codes marked `tag`.
pub fn codes(tag: &str, n: u64) -> Vec<String> {
    (0..n).map(|i| code(tag, i)).collect()
}

/// `FLUSHALL SYNC`, keeping the campaign counter (`{coupon}:seq`), so that no campaign id is
/// reused (a process keeps what it learnt of a campaign by id).
pub async fn flush(conn: &mut impl ConnectionLike, prefix: &str) {
    let seq = keys::seq(prefix);
    let last: Option<String> = query(conn, &["GET", &seq]).await;
    let _: () = query(conn, &["FLUSHALL", "SYNC"]).await;
    if let Some(last) = last {
        let _: () = query(conn, &["SET", &seq, &last]).await;
    }
}

/// A campaign request: `per_user` [`PER_USER`], open for an hour.
pub fn new_campaign(
    now: i64,
    reference: &str,
    source: CodeSource,
    starts: Option<i64>,
) -> NewCampaign {
    let req = NewCampaign {
        starts_at_ms: starts,
        per_user: PER_USER,
        redeem_by_ms: now + 7_200_000,
        ..NewCampaign::new("20 off 100", source, now + 3_600_000, reference)
    };
    req.check().expect("a valid campaign");
    req
}

/// Creates `req`.
pub async fn create(store: &Store, req: &NewCampaign) -> Created {
    match coupons::create(store, req).await.expect("create") {
        CampaignCreateOutcome::Created(c) => c,
        other => panic!("campaign {}: {other:?}", req.reference),
    }
}

/// An uploaded campaign of `codes`, open when this returns: one creation of up to 10,000 codes
/// (open at once), or, for more, a creation that opens a little later and batches of 10,000
/// added before the start (`store::coupons::add_codes`), as the API allows.
pub async fn uploaded_campaign(store: &Store, reference: &str, codes: &[String]) -> Created {
    let now = redis_ms(&mut store.conn().await.expect("connect")).await;
    let batches: Vec<&[String]> = codes.chunks(MAX_CODES_PER_BATCH).collect();
    let start = (batches.len() > 1).then(|| now + 3_000 + 1_500 * batches.len() as i64);
    let req = new_campaign(
        now,
        reference,
        CodeSource::Uploaded(batches[0].to_vec()),
        start,
    );
    let created = create(store, &req).await;
    for (b, batch) in batches.iter().enumerate().skip(1) {
        match coupons::add_codes(store, &created.campaign_id, &format!("b{b}"), batch)
            .await
            .expect("add codes")
        {
            AddCodesOutcome::Added { .. } => {}
            other => panic!("{reference}: batch {b}: {other:?}"),
        }
    }
    if let Some(start) = start {
        while redis_ms(&mut store.conn().await.expect("connect")).await < start {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    created
}

/// A generated campaign of `n` codes, open at once.
pub async fn generated_campaign(store: &Store, reference: &str, n: u64) -> Created {
    let now = redis_ms(&mut store.conn().await.expect("connect")).await;
    create(
        store,
        &new_campaign(now, reference, CodeSource::Generated(n), None),
    )
    .await
}

/// Loads the grab script on `conn` (every call then one `EVALSHA` that hits the cache).
pub async fn load_grab(conn: &mut impl ConnectionLike) {
    let sha: String = query(conn, &["SCRIPT", "LOAD", scripts::COUPON_GRAB.source()]).await;
    assert_eq!(sha, scripts::COUPON_GRAB.get_hash(), "SCRIPT LOAD");
}

/// `part` as a percentage of `whole`.
pub fn pct(part: f64, whole: f64) -> f64 {
    if whole > 0.0 {
        100.0 * part / whole
    } else {
        0.0
    }
}
