//! Part 3: bytes per code.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use harness::RedisServer;
use hongbao::coupons;
use hongbao::coupons::rules::VisitLimit;
use hongbao::coupons::CouponGrabOutcome;
use hongbao::Store;
use redis::aio::ConnectionLike;
use serde_json::{json, Value};

use crate::crowd::{check_campaign, check_seed, hongbao_crowd, seed_crowd, seed_sadd, told, Crowd};
use crate::server::{
    all_keys, codes, config, generated_campaign, load_grab, memory_usage, uploaded_campaign,
    used_memory,
};
use crate::support::{node_conn, pin};
use crate::Settings;

/// The kind of a key, for the memory table.
pub fn kind(key: &str) -> &'static str {
    if key.starts_with("seed:") {
        if key.contains(":visits:") {
            "seed visit counters"
        } else {
            "seed SADD set"
        }
    } else if key.ends_with(":coupon-codes") {
        "code directory (*:coupon-codes)"
    } else if key.contains(":coupons:") {
        "user lists (*:coupons:*)"
    } else if key.contains(":{coupon}:") {
        "campaign records ({coupon})"
    } else if key.ends_with(":journal") {
        "journal (until ledger-export acks)"
    } else if key.contains(":visits:") {
        "visit counters"
    } else if key.ends_with(":codes") {
        "codes list"
    } else if key.ends_with(":issued") {
        "issued records"
    } else if key.ends_with(":holders") {
        "holders"
    } else if key.ends_with(":pending") || key.ends_with(":loans") || key.ends_with(":batches") {
        "reservations, loans, batches"
    } else if key.contains(":coupon:") {
        "pool hashes"
    } else {
        "other"
    }
}

/// Keys and bytes by kind.
pub type Usage = BTreeMap<&'static str, (i64, i64)>;

/// Every key's `MEMORY USAGE`, by kind, and `used_memory`.
pub async fn usage(conn: &mut impl ConnectionLike) -> (Usage, f64) {
    let keys = all_keys(conn).await;
    let sizes = memory_usage(conn, &keys).await;
    let mut out = Usage::new();
    for (k, b) in keys.iter().zip(sizes) {
        let e = out.entry(kind(k)).or_default();
        e.0 += 1;
        e.1 += b as i64;
    }
    (out, used_memory(conn).await)
}

/// One step of part 3: what changed, per code.
#[derive(Debug, Clone)]
pub struct Step {
    /// What the step did.
    pub label: String,
    /// The codes it is counted per.
    pub per: u64,
    /// Keys and bytes by kind, after minus before.
    pub delta: Vec<(&'static str, i64, i64)>,
    /// `used_memory` after minus before.
    pub used_memory: f64,
}

impl Step {
    /// `after` minus `before`.
    pub fn new(label: String, per: u64, before: &(Usage, f64), after: &(Usage, f64)) -> Step {
        let kinds: HashSet<&'static str> = before.0.keys().chain(after.0.keys()).copied().collect();
        let mut delta: Vec<(&'static str, i64, i64)> = kinds
            .into_iter()
            .map(|k| {
                let (kb, bb) = before.0.get(k).copied().unwrap_or_default();
                let (ka, ba) = after.0.get(k).copied().unwrap_or_default();
                (k, ka - kb, ba - bb)
            })
            .filter(|&(_, keys, bytes)| keys != 0 || bytes != 0)
            .collect();
        delta.sort_by_key(|&(_, _, bytes)| std::cmp::Reverse(bytes.abs()));
        Step {
            label,
            per,
            delta,
            used_memory: after.1 - before.1,
        }
    }

    /// The step's bytes of the kinds `pick` selects.
    pub fn bytes(&self, pick: impl Fn(&str) -> bool) -> i64 {
        self.delta
            .iter()
            .filter(|(k, _, _)| pick(k))
            .map(|&(_, _, b)| b)
            .sum()
    }

    /// Bytes per code of the kinds `pick` selects.
    pub fn per_code(&self, pick: impl Fn(&str) -> bool) -> f64 {
        self.bytes(pick) as f64 / self.per as f64
    }
}

/// Part 3's figures.
pub struct Memory {
    /// The steps, in order: uploaded created, seed set, generated created, generated issued,
    /// uploaded issued, seed grabs.
    pub steps: Vec<Step>,
}

/// Part 3 on a fresh server.
pub async fn memory(
    s: &Settings,
    pinned: bool,
    visits: VisitLimit,
    problems: &mut Vec<String>,
) -> Memory {
    let server = RedisServer::start();
    if pinned {
        pin(server.pid(), 0);
    }
    let mut conn = node_conn(&server.url()).await;
    load_grab(&mut conn).await;
    let store = Arc::new(Store::new(config(server.url(), false)));
    let n = s.memory_codes;
    let all = codes("MU", n);
    let mut steps = Vec::new();

    // Warm-up: every script cached and the campaign records created, so that the steps count
    // what a campaign and its codes add.
    for c in [
        uploaded_campaign(&store, "memory-warm-up", &codes("MW", 1)).await,
        generated_campaign(&store, "memory-warm-up-generated", 1).await,
    ] {
        let won = coupons::grab(&store, &c.campaign_id, "warm-up", visits).await;
        assert!(
            matches!(won, Ok(CouponGrabOutcome::Grabbed { .. })),
            "{won:?}"
        );
    }

    let s0 = usage(&mut conn).await;
    let up = uploaded_campaign(&store, "memory-uploaded", &all).await;
    let s1 = usage(&mut conn).await;
    steps.push(Step::new(
        format!("hongbao: uploaded campaign of {n} codes created"),
        n,
        &s0,
        &s1,
    ));
    seed_sadd(&mut conn, &all).await;
    let s2 = usage(&mut conn).await;
    steps.push(Step::new(
        format!("seed 004: SADD of the same {n} codes"),
        n,
        &s1,
        &s2,
    ));
    let gen = generated_campaign(&store, "memory-generated", s.memory_generated).await;
    let s3 = usage(&mut conn).await;
    steps.push(Step::new(
        format!(
            "hongbao: generated campaign of {} codes created ({} pools)",
            s.memory_generated, gen.pools
        ),
        s.memory_generated,
        &s2,
        &s3,
    ));
    let issue = n.min(s.memory_generated);
    let crowd_g = Crowd {
        users: issue,
        repeat_every: 0,
        tasks: s.tasks,
        prefix: "g",
    };
    let out_g = hongbao_crowd(store.clone(), &gen.campaign_id, &crowd_g, visits).await;
    let s4 = usage(&mut conn).await;
    steps.push(Step::new(
        format!("hongbao: {issue} generated codes issued (grab by {issue} users)"),
        issue,
        &s3,
        &s4,
    ));
    let crowd_u = Crowd {
        users: n,
        repeat_every: 0,
        tasks: s.tasks,
        prefix: "m",
    };
    let out_u = hongbao_crowd(store.clone(), &up.campaign_id, &crowd_u, visits).await;
    let s5 = usage(&mut conn).await;
    steps.push(Step::new(
        format!("hongbao: all {n} uploaded codes issued (grab by {n} users)"),
        n,
        &s4,
        &s5,
    ));
    let out_s = seed_crowd(&conn, &crowd_u, visits, false).await;
    let s6 = usage(&mut conn).await;
    steps.push(Step::new(
        format!("seed 004: {n} users' canAccess + SPOP (every code handed out)"),
        n,
        &s5,
        &s6,
    ));

    for (name, c, crowd, out, uploaded) in [
        ("memory generated", &gen, &crowd_g, &out_g, None),
        (
            "memory uploaded",
            &up,
            &crowd_u,
            &out_u,
            Some(all.as_slice()),
        ),
    ] {
        if out.mix[0] != crowd.users {
            problems.push(format!(
                "{name}: {} of {} grabs won ({:?})",
                out.mix[0], crowd.users, out.mix
            ));
        }
        problems.extend(
            check_campaign(&store, c, &told(crowd, out), uploaded)
                .await
                .into_iter()
                .map(|p| format!("{name}: {p}")),
        );
    }
    problems.extend(check_seed("memory seed", &out_s, n));
    drop(server);
    Memory { steps }
}

impl Memory {
    /// Uploaded, un-issued: (pool keys, directory, campaign records, all) bytes per code.
    pub fn uploaded(&self) -> (f64, f64, f64, f64) {
        let st = &self.steps[0];
        (
            st.per_code(|k| k == "pool hashes" || k == "codes list"),
            st.per_code(|k| k.starts_with("code directory")),
            st.per_code(|k| k.starts_with("campaign records")),
            st.per_code(|_| true),
        )
    }

    /// The seed's set, bytes per code.
    pub fn seed(&self) -> f64 {
        self.steps[1].per_code(|_| true)
    }

    /// Generated, before issuing: bytes per code.
    pub fn generated(&self) -> f64 {
        self.steps[2].per_code(|_| true)
    }

    /// Per issued generated code: (issued + holders + user list, journal, all).
    pub fn issued(&self) -> (f64, f64, f64) {
        let st = &self.steps[3];
        (
            st.per_code(|k| k == "issued records" || k == "holders" || k.starts_with("user lists")),
            st.per_code(|k| k.starts_with("journal")),
            st.per_code(|_| true),
        )
    }
}

/// Prints part 3's table.
pub fn print_memory(m: &Memory) {
    println!();
    println!("## 3. Bytes per code (MEMORY USAGE <key> SAMPLES 0 of every key, by kind; INFO memory used_memory)");
    println!();
    println!("| step | kind | keys Δ | bytes Δ | bytes per code |");
    println!("| --- | --- | ---: | ---: | ---: |");
    for st in &m.steps {
        for &(k, keys, bytes) in &st.delta {
            println!(
                "| {} | {k} | {keys} | {bytes} | {:.1} |",
                st.label,
                bytes as f64 / st.per as f64
            );
        }
        let total: i64 = st.delta.iter().map(|d| d.2).sum();
        println!(
            "| {} | **total** (used_memory Δ: {:.0} B, {:.1} per code) | {} | {total} | {:.1} |",
            st.label,
            st.used_memory,
            st.used_memory / st.per as f64,
            st.delta.iter().map(|d| d.1).sum::<i64>(),
            total as f64 / st.per as f64
        );
    }
    let (pool, dir, rec, all) = m.uploaded();
    let (issued, journal, issued_all) = m.issued();
    println!();
    println!(
        "uploaded: {all:.1} B/code stored before any grab (pool hash + codes list {pool:.1}, \
         directory {dir:.1}, campaign records {rec:.1}) vs seed 004's SADD set {:.1} B/code \
         ({:.2}×); generated: {:.3} B/code before issuing; per issued generated code {issued:.1} \
         B (issued record + holders entry + user list) + {journal:.1} B journal entry until \
         ledger-export acknowledges it ({issued_all:.1} B in all)",
        m.seed(),
        all / m.seed(),
        m.generated()
    );
}

/// Part 3's JSON.
pub fn memory_json(m: &Memory) -> Value {
    let (pool, dir, rec, all) = m.uploaded();
    let (issued, journal, issued_all) = m.issued();
    json!({
        "uploaded_bytes_per_code": all,
        "uploaded_pool_bytes_per_code": pool,
        "uploaded_directory_bytes_per_code": dir,
        "uploaded_records_bytes_per_code": rec,
        "seed_sadd_bytes_per_code": m.seed(),
        "generated_bytes_per_code_before_issuing": m.generated(),
        "generated_bytes_per_issued_code": issued,
        "generated_journal_bytes_per_issued_code": journal,
        "generated_all_bytes_per_issued_code": issued_all,
        "steps": m.steps.iter().map(|st| json!({
            "step": st.label,
            "per_codes": st.per,
            "used_memory_delta": st.used_memory,
            "kinds": st.delta.iter().map(|&(k, keys, bytes)| json!({
                "kind": k, "keys": keys, "bytes": bytes,
            })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}
