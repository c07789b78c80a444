//! Part 2: the cluster's spread of a generated campaign's grabs.

use std::sync::Arc;

use hongbao::coupons;
use hongbao::coupons::rules::VisitLimit;
use hongbao::coupons::PoolKeys;
use hongbao::Store;
use serde_json::{json, Value};

use crate::crowd::{check_campaign, hongbao_crowd, told, HB_PATHS};
use crate::server::{config, generated_campaign, load_grab, main_cpu};
use crate::support::{info_field, owner_of, query, Node};
use crate::{Settings, SHARE_TOLERANCE};

/// One master's share of the cluster storm.
#[derive(Debug, Clone)]
pub struct Share {
    /// `host:port`.
    pub addr: String,
    /// Its slots.
    pub slots: String,
    /// Pools of the campaign it holds.
    pub pools: usize,
    /// `cmdstat_evalsha` calls.
    pub evalsha_calls: u64,
    /// `cmdstat_evalsha` usec.
    pub evalsha_usec: f64,
    /// Main-thread CPU over the storm, seconds.
    pub cpu_secs: f64,
}

/// Part 2's figures.
pub struct ClusterSpread {
    /// The campaign's codes and pools.
    pub codes: u64,
    /// Its pools.
    pub pools: u32,
    /// Requests.
    pub requests: u64,
    /// Wall time, seconds.
    pub secs: f64,
    /// Answers per path.
    pub mix: Vec<u64>,
    /// Every master.
    pub masters: Vec<Share>,
}

impl ClusterSpread {
    /// Each master's shares of (EVALSHA calls, EVALSHA usec, main-thread CPU).
    pub fn shares(&self) -> Vec<(f64, f64, f64)> {
        let calls: f64 = self.masters.iter().map(|m| m.evalsha_calls as f64).sum();
        let usec: f64 = self.masters.iter().map(|m| m.evalsha_usec).sum();
        let cpu: f64 = self.masters.iter().map(|m| m.cpu_secs).sum();
        self.masters
            .iter()
            .map(|m| {
                (
                    m.evalsha_calls as f64 / calls,
                    m.evalsha_usec / usec,
                    m.cpu_secs / cpu,
                )
            })
            .collect()
    }

    /// Whether every share is within 1/3 ± [`SHARE_TOLERANCE`].
    pub fn met(&self) -> bool {
        let ok = |x: f64| (x - 1.0 / 3.0).abs() <= SHARE_TOLERANCE;
        self.shares()
            .iter()
            .all(|&(a, b, c)| ok(a) && ok(b) && ok(c))
    }
}

/// Part 2: a generated campaign stormed on the cluster.
pub async fn cluster_spread(
    nodes: &mut [Node],
    url: &str,
    s: &Settings,
    visits: VisitLimit,
    problems: &mut Vec<String>,
) -> ClusterSpread {
    let store = Arc::new(Store::new(config(url.to_string(), true)));
    let c = generated_campaign(&store, "cluster-drop", s.cluster_codes).await;
    let mut owners = vec![0usize; nodes.len()];
    for k in 0..c.pools {
        let keys = PoolKeys::new(
            &store.config().key_prefix,
            &c.campaign_id,
            c.campaign_no,
            k,
            c.pools,
        );
        let slot: u16 = query(&mut nodes[0].conn, &["CLUSTER", "KEYSLOT", &keys.pool]).await;
        owners[owner_of(nodes, slot)] += 1;
    }
    coupons::campaign(&store, &c.campaign_id, None)
        .await
        .expect("campaign")
        .expect("campaign exists");
    let mut before = Vec::with_capacity(nodes.len());
    for n in nodes.iter_mut() {
        load_grab(&mut n.conn).await;
        let _: () = query(&mut n.conn, &["CONFIG", "RESETSTAT"]).await;
        before.push(main_cpu(&mut n.conn).await);
    }
    let crowd = s.crowd(s.cluster_grabbers, "c");
    let out = hongbao_crowd(store.clone(), &c.campaign_id, &crowd, visits).await;
    let mut masters = Vec::with_capacity(nodes.len());
    for (k, n) in nodes.iter_mut().enumerate() {
        let cpu = main_cpu(&mut n.conn).await - before[k];
        let info: String = query(&mut n.conn, &["INFO", "commandstats"]).await;
        let failed = info_field(&info, "cmdstat_evalsha", Some("failed_calls")) as u64;
        let evals = info_field(&info, "cmdstat_eval", Some("calls")) as u64;
        if failed + evals > 0 {
            problems.push(format!(
                "cluster {}: {failed} failed EVALSHA calls, {evals} EVAL calls",
                n.addr
            ));
        }
        masters.push(Share {
            addr: n.addr.clone(),
            slots: n.slots.clone(),
            pools: owners[k],
            evalsha_calls: info_field(&info, "cmdstat_evalsha", Some("calls")) as u64,
            evalsha_usec: info_field(&info, "cmdstat_evalsha", Some("usec")),
            cpu_secs: cpu,
        });
    }
    let requests: u64 = out.mix.iter().sum();
    if out.mix[5] > 0 {
        problems.push(format!("cluster: {} grab calls failed", out.mix[5]));
    }
    if requests != crowd.requests() {
        problems.push(format!(
            "cluster: {requests} requests, {} expected",
            crowd.requests()
        ));
    }
    problems.extend(
        check_campaign(&store, &c, &told(&crowd, &out), None)
            .await
            .into_iter()
            .map(|p| format!("cluster: {p}")),
    );
    ClusterSpread {
        codes: c.codes_total,
        pools: c.pools,
        requests,
        secs: out.secs,
        mix: out.mix,
        masters,
    }
}

/// Prints part 2's table.
pub fn print_cluster(r: &ClusterSpread, s: &Settings) {
    println!();
    println!(
        "## 2. Cluster spread: a generated campaign of {} codes in {} pools, {} users ({} \
         requests in {:.2} s, {:.0}/s: {})",
        r.codes,
        r.pools,
        s.cluster_grabbers,
        r.requests,
        r.secs,
        r.requests as f64 / r.secs,
        HB_PATHS
            .iter()
            .zip(&r.mix)
            .filter(|(_, n)| **n > 0)
            .map(|(p, n)| format!("{p} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!();
    println!(
        "| master | slots | pools | EVALSHA calls | share of calls | EVALSHA µs/call | share of \
         EVALSHA µs | main-thread CPU (s) | share of CPU | goal 1/3 ± {SHARE_TOLERANCE} |"
    );
    println!("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |");
    let ok = |x: f64| (x - 1.0 / 3.0).abs() <= SHARE_TOLERANCE;
    for (m, (calls, usec, cpu)) in r.masters.iter().zip(r.shares()) {
        println!(
            "| {} | {} | {} | {} | {:.1}% | {:.2} | {:.1}% | {:.2} | {:.1}% | {} |",
            m.addr,
            m.slots,
            m.pools,
            m.evalsha_calls,
            100.0 * calls,
            m.evalsha_usec / m.evalsha_calls.max(1) as f64,
            100.0 * usec,
            m.cpu_secs,
            100.0 * cpu,
            if ok(calls) && ok(usec) && ok(cpu) {
                "met"
            } else {
                "not met"
            }
        );
    }
    println!();
    println!(
        "EVALSHA = INFO commandstats cmdstat_evalsha of each node after CONFIG RESETSTAT (the grab \
         script); main-thread CPU = INFO cpu used_cpu_*_main_thread over the storm (also the \
         users' coupon-list writes on their own tags and the cluster bus)"
    );
}

/// Part 2's JSON.
pub fn cluster_json(r: &ClusterSpread, s: &Settings) -> Value {
    json!({
        "codes": r.codes,
        "pools": r.pools,
        "users": s.cluster_grabbers,
        "requests": r.requests,
        "secs": r.secs,
        "outcomes": HB_PATHS.iter().zip(&r.mix)
            .map(|(p, n)| (p.to_string(), json!(n)))
            .collect::<serde_json::Map<_, _>>(),
        "goal_met": r.met(),
        "masters": r.masters.iter().zip(r.shares()).map(|(m, (calls, usec, cpu))| json!({
            "node": m.addr,
            "slots": m.slots,
            "pools": m.pools,
            "evalsha_calls": m.evalsha_calls,
            "evalsha_usec": m.evalsha_usec,
            "main_thread_cpu_secs": m.cpu_secs,
            "share_of_calls": calls,
            "share_of_evalsha_usec": usec,
            "share_of_cpu": cpu,
        })).collect::<Vec<_>>(),
    })
}
