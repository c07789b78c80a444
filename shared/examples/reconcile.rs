//! Reconciles the ledger feed with the wallets: reads exported events as JSON lines (each line
//! an EventBridge event as a consumer receives it, `{"detail-type", "source", "detail", ...}`,
//! or its `detail` alone) from the file given, or stdin, drops duplicate deliveries by
//! `event_id`, and prints per user the balance in Redis, the events' sum and the gap
//! ([`hongbao::store::audit::reconcile`]). Exit status 0 when every gap is 0, 1 when one is
//! not, 2 for bad input or Redis trouble.
//!
//! Redis comes from the functions' settings (`REDIS_URL`, `REDIS_CLUSTER`, `REDIS_AUTH`, ...,
//! `HONGBAO_KEY_PREFIX`). Run it when the feed has caught up (`LedgerExportLagMs` 0) and no
//! money moves, or expect the gaps of the movements in flight.
//!
//! ```sh
//! # events drained from the example queue into events.jsonl, one message body per line:
//! REDIS_URL=rediss://... cargo run -p hongbao --features ops --example reconcile -- events.jsonl
//! ```

use std::io::Read;

use hongbao::store::audit::{self, ExportedMovement};
use hongbao::{Config, Store};
use serde_json::Value;

fn fail(message: String) -> ! {
    eprintln!("reconcile: {message}");
    std::process::exit(2);
}

/// The movement of one line: an EventBridge event's `detail`, or a bare detail.
fn movement(n: usize, line: &str) -> ExportedMovement {
    let v: Value =
        serde_json::from_str(line).unwrap_or_else(|e| fail(format!("line {n}: not JSON: {e}")));
    let d = if v.get("detail").is_some() {
        &v["detail"]
    } else {
        &v
    };
    let text = |k: &str| {
        d[k].as_str()
            .map(str::to_string)
            .unwrap_or_else(|| fail(format!("line {n}: no `{k}`")))
    };
    ExportedMovement {
        event_id: text("event_id"),
        user_id: text("user_id"),
        amount_cents: d["amount_cents"]
            .as_i64()
            .unwrap_or_else(|| fail(format!("line {n}: no integer `amount_cents`"))),
    }
}

#[tokio::main]
async fn main() {
    let mut input = String::new();
    let read = match std::env::args().nth(1) {
        Some(path) => std::fs::read_to_string(&path).map(|s| input = s),
        None => std::io::stdin().read_to_string(&mut input).map(drop),
    };
    read.unwrap_or_else(|e| fail(format!("cannot read the events: {e}")));
    let events: Vec<ExportedMovement> = input
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| movement(i + 1, l))
        .collect();
    let config = Config::from_env(&[]).unwrap_or_else(|e| fail(e.to_string()));
    let store = Store::new(config);
    let r = audit::reconcile(&store, &events)
        .await
        .unwrap_or_else(|e| fail(e.to_string()));
    println!("user\tbalance_cents\tevents_cents\tevents\tgap_cents");
    for u in &r.users {
        println!(
            "{}\t{}\t{}\t{}\t{}",
            u.user_id,
            u.balance_cents,
            u.events_cents,
            u.events,
            u.gap_cents()
        );
    }
    let gaps = r.gaps();
    println!(
        "reconciliation: {} users, {} events ({} duplicate deliveries dropped), {} with a gap",
        r.users.len(),
        r.events,
        r.duplicates,
        gaps.len()
    );
    std::process::exit(i32::from(!gaps.is_empty()));
}
