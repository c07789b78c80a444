//! Part 5: pool size: a pool's bytes, its biggest key, and the time to move its slot.

use std::time::Instant;

use hongbao::coupons::rules::{campaign_id, VisitLimit};
use hongbao::coupons::PoolKeys;
use hongbao::store::scripts;
use hongbao::store::scripts::{text, Call, CouponCreatePoolCall, CouponGrabCall};
use redis::aio::MultiplexedConnection;
use serde_json::{json, Value};

use crate::server::{codes, commandstats, load_grab, memory_usage, redis_ms};
use crate::support::{owner_of, query, Node};
use crate::{Settings, FILL_PIPELINE, PER_USER};

/// One pool measured in one state, and its slot moved.
#[derive(Debug, Clone)]
pub struct PoolMove {
    /// Codes of the pool.
    pub size: u64,
    /// `fresh` or `sold out`.
    pub state: &'static str,
    /// Seconds to write the pool (fresh) or to issue every code (sold out).
    pub write_secs: f64,
    /// Bytes of the pool's own keys.
    pub pool_bytes: u64,
    /// Its biggest key (the part after the pool's name, e.g. `:codes`).
    pub biggest: String,
    /// That key's bytes.
    pub biggest_bytes: u64,
    /// That key's `DUMP` size.
    pub dump_bytes: u64,
    /// That key's `MIGRATE`, client wall time, ms.
    pub biggest_ms: f64,
    /// Keys in the slot (the pool's, the tag's journal, other keys of the slot).
    pub slot_keys: usize,
    /// Their bytes.
    pub slot_bytes: u64,
    /// The whole slot move, ms.
    pub slot_ms: f64,
    /// The source's `cmdstat_migrate` usec over the move.
    pub migrate_usec: f64,
    /// The target's `cmdstat_restore-asking` usec over the move.
    pub restore_usec: f64,
}

/// Measures the slot `slot` of the pool named `base` (size `size`) on node `*owner`, then moves
/// the slot to the next node.
#[allow(clippy::too_many_arguments)]
pub async fn measure_and_move(
    nodes: &mut [Node],
    slot: u16,
    owner: &mut usize,
    base: &str,
    size: u64,
    state: &'static str,
    write_secs: f64,
    problems: &mut Vec<String>,
) -> PoolMove {
    let (src, dst) = (*owner, (*owner + 1) % nodes.len());
    let slot_s = slot.to_string();
    let count: u64 = query(
        &mut nodes[src].conn,
        &["CLUSTER", "COUNTKEYSINSLOT", &slot_s],
    )
    .await;
    let keys: Vec<String> = query(
        &mut nodes[src].conn,
        &["CLUSTER", "GETKEYSINSLOT", &slot_s, &count.to_string()],
    )
    .await;
    let sizes = memory_usage(&mut nodes[src].conn, &keys).await;
    let own = |k: &str| k == base || k.starts_with(&format!("{base}:"));
    let pool_bytes: u64 = keys
        .iter()
        .zip(&sizes)
        .filter(|(k, _)| own(k))
        .map(|(_, b)| b)
        .sum();
    let (biggest, biggest_bytes) = keys
        .iter()
        .zip(&sizes)
        .filter(|(k, _)| own(k))
        .max_by_key(|(_, b)| **b)
        .map(|(k, b)| (k.clone(), *b))
        .expect("the pool's keys");
    let dump: Option<Vec<u8>> = query(&mut nodes[src].conn, &["DUMP", &biggest]).await;
    let dump_bytes = dump.map_or(0, |d| d.len() as u64);

    let src_id: String = query(&mut nodes[src].conn, &["CLUSTER", "MYID"]).await;
    let dst_id: String = query(&mut nodes[dst].conn, &["CLUSTER", "MYID"]).await;
    let dst_port = nodes[dst].port().to_string();
    for n in [src, dst] {
        let _: () = query(&mut nodes[n].conn, &["CONFIG", "RESETSTAT"]).await;
    }
    let started = Instant::now();
    let _: () = query(
        &mut nodes[dst].conn,
        &["CLUSTER", "SETSLOT", &slot_s, "IMPORTING", &src_id],
    )
    .await;
    let _: () = query(
        &mut nodes[src].conn,
        &["CLUSTER", "SETSLOT", &slot_s, "MIGRATING", &dst_id],
    )
    .await;
    let mut biggest_ms = 0.0;
    let mut moved = 0usize;
    loop {
        let batch: Vec<String> = query(
            &mut nodes[src].conn,
            &["CLUSTER", "GETKEYSINSLOT", &slot_s, "1000"],
        )
        .await;
        if batch.is_empty() {
            break;
        }
        for k in &batch {
            let t = Instant::now();
            let reply: String = query(
                &mut nodes[src].conn,
                &["MIGRATE", "127.0.0.1", &dst_port, k, "0", "60000"],
            )
            .await;
            let ms = t.elapsed().as_secs_f64() * 1e3;
            if *k == biggest {
                biggest_ms = ms;
            }
            if reply == "OK" {
                moved += 1;
            }
        }
    }
    let others: Vec<usize> = (0..nodes.len()).filter(|&n| n != dst && n != src).collect();
    for n in std::iter::once(dst)
        .chain(std::iter::once(src))
        .chain(others)
    {
        let _: () = query(
            &mut nodes[n].conn,
            &["CLUSTER", "SETSLOT", &slot_s, "NODE", &dst_id],
        )
        .await;
    }
    let slot_ms = started.elapsed().as_secs_f64() * 1e3;
    let src_stats = commandstats(&mut nodes[src].conn).await;
    let dst_stats = commandstats(&mut nodes[dst].conn).await;
    let arrived: u64 = query(
        &mut nodes[dst].conn,
        &["CLUSTER", "COUNTKEYSINSLOT", &slot_s],
    )
    .await;
    if moved != keys.len() || arrived != count {
        problems.push(format!(
            "pool of {size} ({state}): {moved} of {} keys migrated, {arrived} arrived",
            keys.len()
        ));
    }
    *owner = dst;
    PoolMove {
        size,
        state,
        write_secs,
        pool_bytes,
        biggest: biggest.strip_prefix(base).unwrap_or(&biggest).to_string(),
        biggest_bytes,
        dump_bytes,
        biggest_ms,
        slot_keys: keys.len(),
        slot_bytes: sizes.iter().sum(),
        slot_ms,
        migrate_usec: src_stats.get("migrate").map_or(0.0, |s| s.1),
        restore_usec: dst_stats.get("restore-asking").map_or(0.0, |s| s.1),
    }
}

/// Issues every code of the one-pool campaign `id` (number `no`, `size` codes) on `conn`
/// (the pool's node) by `size` users, pipelined; the seconds it took.
pub async fn fill(
    conn: &mut MultiplexedConnection,
    keys: &PoolKeys,
    id: &str,
    size: u64,
    visits: VisitLimit,
    problems: &mut Vec<String>,
) -> f64 {
    load_grab(conn).await;
    let started = Instant::now();
    let mut grabbed = 0u64;
    let indices: Vec<u64> = (0..size).collect();
    for chunk in indices.chunks(FILL_PIPELINE) {
        let mut pipe = redis::pipe();
        for &i in chunk {
            let user = format!("t-{i:07}");
            let reservation = format!("{i:016x}");
            let (k, a) = CouponGrabCall {
                pool: &keys.pool,
                codes: &keys.codes,
                issued: &keys.issued,
                issued_by_time: &keys.issued_by_time,
                holders: &keys.holders,
                rate: &keys.visits(&user),
                pending: &keys.pending,
                journal: &keys.journal,
                user_id: &user,
                home: 0,
                rate_limit: visits.per_window,
                rate_window_ms: visits.window_ms,
                reservation: &reservation,
                campaign_id: id,
            }
            .texts();
            pipe.cmd("EVALSHA")
                .arg(scripts::COUPON_GRAB.get_hash())
                .arg(k.len())
                .arg(k)
                .arg(a);
        }
        let replies: Vec<String> = pipe.query_async(conn).await.expect("grabs");
        grabbed += replies.iter().filter(|r| r.starts_with("grabbed:")).count() as u64;
    }
    let secs = started.elapsed().as_secs_f64();
    let (left, issued): (u64, u64) = redis::pipe()
        .cmd("LLEN")
        .arg(&keys.codes)
        .cmd("HLEN")
        .arg(&keys.issued)
        .query_async(conn)
        .await
        .expect("counts");
    if grabbed != size || left != 0 || issued != size {
        problems.push(format!(
            "pool of {size}: {grabbed} grabbed, {left} left, {issued} issued records"
        ));
    }
    secs
}

/// Part 5 on the cluster.
pub async fn pool_sizes(
    nodes: &mut [Node],
    s: &Settings,
    visits: VisitLimit,
    problems: &mut Vec<String>,
) -> Vec<PoolMove> {
    let mut out = Vec::new();
    for (j, &size) in s.pool_sizes.iter().enumerate() {
        // Campaign numbers far above the ones the store gives (up to 32^5 - 1).
        let no = 30_000_000 + j as u64;
        let id = campaign_id(no);
        let keys = PoolKeys::new("hb", &id, no, 0, 1);
        let slot: u16 = query(&mut nodes[0].conn, &["CLUSTER", "KEYSLOT", &keys.pool]).await;
        let mut owner = owner_of(nodes, slot);
        let all = codes(&format!("P{j}"), size);
        let batch: Vec<&str> = all.iter().map(String::as_str).collect();
        let conn = &mut nodes[owner].conn;
        let now = redis_ms(conn).await;
        let sha: String = query(
            conn,
            &["SCRIPT", "LOAD", scripts::COUPON_CREATE_POOL.source()],
        )
        .await;
        assert_eq!(sha, scripts::COUPON_CREATE_POOL.get_hash());
        let started = Instant::now();
        let reply = CouponCreatePoolCall {
            pool: &keys.pool,
            codes: &keys.codes,
            fingerprint: "v1:bench",
            title: "20 off 100",
            starts_at_ms: now - 1_000,
            ends_at_ms: now + 3_600_000,
            redeem_by_ms: now + 7_200_000,
            per_user: PER_USER,
            pools: 1,
            kind: "uploaded",
            first_index: 0,
            end_index: 0,
            secret: "",
            campaign_total: size,
            id_tag: "",
            batch: &batch,
            ..Default::default()
        }
        .invocation()
        .invoke_async(conn)
        .await
        .expect("coupon_create_pool");
        assert_eq!(
            text("coupon_create_pool", reply).expect("reply"),
            "created",
            "pool of {size}"
        );
        let write = started.elapsed().as_secs_f64();
        let base = keys.pool.clone();
        out.push(
            measure_and_move(
                nodes, slot, &mut owner, &base, size, "fresh", write, problems,
            )
            .await,
        );
        let secs = fill(&mut nodes[owner].conn, &keys, &id, size, visits, problems).await;
        out.push(
            measure_and_move(
                nodes, slot, &mut owner, &base, size, "sold out", secs, problems,
            )
            .await,
        );
        eprintln!("  part 5: pool of {size} measured");
    }
    out
}

/// Prints part 5's table.
pub fn print_pools(rows: &[PoolMove]) {
    println!();
    println!("## 5. One pool's size: bytes and the time to move its hash slot (3-master cluster)");
    println!();
    println!(
        "| codes in the pool | state | written in (s) | pool keys (bytes) | bytes per code | \
         biggest key | its bytes | its DUMP (bytes) | its MIGRATE (ms) | slot: keys, bytes | \
         slot move (ms) | source MIGRATE µs / target RESTORE µs |"
    );
    println!("| ---: | --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |");
    for r in rows {
        println!(
            "| {} | {} | {:.2} | {} | {:.1} | {} | {} | {} | {:.1} | {}, {} | {:.1} | {:.0} / {:.0} |",
            r.size,
            r.state,
            r.write_secs,
            r.pool_bytes,
            r.pool_bytes as f64 / r.size as f64,
            r.biggest,
            r.biggest_bytes,
            r.dump_bytes,
            r.biggest_ms,
            r.slot_keys,
            r.slot_bytes,
            r.slot_ms,
            r.migrate_usec,
            r.restore_usec
        );
    }
    println!();
    println!(
        "a pool written by coupon_create_pool.lua (fresh: pool hash + codes list), then every \
         code issued by coupon_grab.lua to distinct users, pipelined (sold out: issued \
         records, holders, the tag's journal); bytes = MEMORY USAGE SAMPLES 0; slot move = \
         SETSLOT IMPORTING/MIGRATING, one MIGRATE per key of the slot, SETSLOT NODE on every \
         master (the source is blocked during each MIGRATE, the target during each RESTORE)"
    );
}

/// Part 5's JSON.
pub fn pools_json(rows: &[PoolMove]) -> Value {
    json!(rows
        .iter()
        .map(|r| json!({
            "codes": r.size,
            "state": r.state,
            "write_secs": r.write_secs,
            "pool_bytes": r.pool_bytes,
            "bytes_per_code": r.pool_bytes as f64 / r.size as f64,
            "biggest_key": r.biggest,
            "biggest_key_bytes": r.biggest_bytes,
            "biggest_key_dump_bytes": r.dump_bytes,
            "biggest_key_migrate_ms": r.biggest_ms,
            "slot_keys": r.slot_keys,
            "slot_bytes": r.slot_bytes,
            "slot_move_ms": r.slot_ms,
            "source_migrate_usec": r.migrate_usec,
            "target_restore_asking_usec": r.restore_usec,
        }))
        .collect::<Vec<_>>())
}
