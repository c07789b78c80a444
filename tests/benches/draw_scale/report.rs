//! The draw bench's table, its checks and its figures file.

use hongbao::packets::draw::DRAW_CHUNK;
use serde_json::{json, Value as Json};

use super::{sweep, Figures, LIMIT_USEC};

/// How much dearer an entry at the largest checkpoint may be than at the first: O(log n)
/// gives log(1,000,000) / log(10,000) = 1.5×, and a set 100 times larger misses the CPU's
/// caches more often; O(n) would give 100×.
const MAX_ENTRY_GROWTH: f64 = 3.0;

fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1e6
}

/// Every check that did not hold.
pub fn problems(f: &Figures) -> Vec<String> {
    let mut out = Vec::new();
    let d = &f.drawn;
    if d.held.max_usec() >= LIMIT_USEC {
        out.push(format!(
            "a command of the draw held the server {} µs (limit: under {LIMIT_USEC} µs)",
            d.held.max_usec()
        ));
    }
    if d.held.max_event_ms() * 1000 >= LIMIT_USEC as i64 {
        out.push(format!(
            "LATENCY LATEST during the draw reached {} ms (limit: under {} ms)",
            d.held.max_event_ms(),
            LIMIT_USEC / 1000
        ));
    }
    let winners = u64::from(f.settings.winners).min(f.settings.entrants as u64);
    let chunks = winners.div_ceil(u64::from(DRAW_CHUNK)).max(1);
    if d.calls != chunks {
        out.push(format!(
            "the draw took {} draw_run calls, not {chunks}",
            d.calls
        ));
    }
    let w = &f.entries.windows;
    if let (Some(first), Some(last)) = (w.first(), w.last()) {
        let growth = last.evalsha_usec / first.evalsha_usec;
        if w.len() > 1 && growth > MAX_ENTRY_GROWTH {
            out.push(format!(
                "an entry at {} entrants costs {growth:.2}× one at {} (more than \
                 {MAX_ENTRY_GROWTH}×: not O(log n))",
                last.entrants, first.entrants
            ));
        }
    }
    out
}

/// The table.
pub fn print(f: &Figures) {
    let st = &f.settings;
    println!(
        "{}: {} entrants, {} shares, {} s entry window; the machine is shared and noisy\n",
        f.server, st.entrants, st.winners, st.entry_secs
    );
    println!("| entrants | draw_enter.lua µs/call | its ZADD µs/call |");
    println!("| ---: | ---: | ---: |");
    for w in &f.entries.windows {
        println!(
            "| {} | {:.2} | {:.2} |",
            w.entrants, w.evalsha_usec, w.zadd_usec
        );
    }
    println!(
        "\nan entry's first call, grab.lua answering the seed: {:.2} µs/call (at {} entrants)",
        f.entries.seed_usec, st.entrants
    );
    println!(
        "entries: {} in {:.1} s through 8 pipelines of 500 in flight on one connection \
         ({:.0} entries/s: this process's pace, not a capacity)",
        st.entrants,
        f.entries.wall_secs,
        st.entrants as f64 / f.entries.wall_secs
    );
    let [before, entered, after] = f.memory;
    println!(
        "memory: used_memory {:.1} MB before, {:.1} MB entered, {:.1} MB drawn; the tickets set \
         {:.1} MB ({:.0} B per entrant)",
        mb(before),
        mb(entered),
        mb(after),
        mb(f.tickets_bytes),
        f.tickets_bytes as f64 / st.entrants as f64
    );
    let d = &f.drawn;
    println!(
        "\ndraw: {:.1} ms wall, {} draw_run calls of up to {DRAW_CHUNK} winners, {:.0} µs/call; \
         each call of 100 µs or more, µs: {:?}",
        d.wall_ms, d.calls, d.usec_per_call, d.call_usec
    );
    println!(
        "draw: longest command {} µs (SLOWLOG, limit {LIMIT_USEC} µs: {}), LATENCY LATEST {:?}, \
         longest PING round trip {} µs over {} pings",
        d.held.max_usec(),
        if d.held.max_usec() < LIMIT_USEC {
            "met"
        } else {
            "MISSED"
        },
        d.held.events,
        d.held.ping_max_usec,
        d.held.pings
    );
    println!(
        "draw: the longest commands logged, the bench's own included: {}",
        d.held.longest(5).join(", ")
    );
    println!(
        "\n| chunk (small draws: {} winners among {} entrants) | calls | median call µs | \
         longest call µs | µs per winner |",
        sweep::SHARES,
        sweep::ENTRANTS
    );
    println!("| ---: | ---: | ---: | ---: | ---: |");
    for x in &f.swept {
        println!(
            "| {} | {} | {:.0} | {} | {:.2} |",
            x.chunk,
            x.call_usec.len(),
            x.median_usec(),
            x.max_usec(),
            x.usec_per_winner()
        );
    }
    println!("\n| dropping the tickets set | gone after ms | longest command µs | LATENCY LATEST | longest PING µs | over {} ms |", LIMIT_USEC / 1000);
    println!("| --- | ---: | ---: | --- | ---: | --- |");
    for x in &f.dropped {
        let events: Vec<String> = x
            .held
            .events
            .iter()
            .map(|e| format!("{} {} ms", e.name, e.max_ms))
            .collect();
        println!(
            "| {} | {:.1} | {} | {} | {} | {} |",
            x.how.label(),
            x.gone_ms,
            x.held.max_usec(),
            if events.is_empty() {
                "—".into()
            } else {
                events.join(", ")
            },
            x.held.ping_max_usec,
            if x.max_hold_usec() >= LIMIT_USEC {
                "OVER"
            } else {
                "no"
            }
        );
    }
    println!(
        "\nlongest command = SLOWLOG (the server's time per command; from 100 µs while scripts \
         run, else from 0 µs); LATENCY \
         LATEST at threshold 1 ms (whole ms; the expiry cycle shows only here); PING = a client \
         pinging every ms on its own connection (includes this machine's scheduling noise). \
         Server settings: {:?}",
        f.lazyfree
    );
}

/// The figures file.
pub fn json(f: &Figures) -> Json {
    let st = &f.settings;
    let [before, entered, after] = f.memory;
    let d = &f.drawn;
    json!({
        "server": f.server,
        "entrants": st.entrants,
        "winners": st.winners,
        "entry_secs": st.entry_secs,
        "limit_usec": LIMIT_USEC,
        "entry": {
            "windows": f.entries.windows.iter().map(|w| json!({
                "entrants": w.entrants,
                "evalsha_usec_per_call": w.evalsha_usec,
                "zadd_usec_per_call": w.zadd_usec,
            })).collect::<Vec<_>>(),
            "wall_secs": f.entries.wall_secs,
            "grab_seed_usec_per_call": f.entries.seed_usec,
        },
        "memory": {
            "used_memory_before": before,
            "used_memory_entered": entered,
            "used_memory_drawn": after,
            "tickets_bytes": f.tickets_bytes,
            "tickets_bytes_per_entrant": f.tickets_bytes as f64 / st.entrants as f64,
        },
        "draw": {
            "chunk": DRAW_CHUNK,
            "wall_ms": d.wall_ms,
            "calls": d.calls,
            "usec_per_call": d.usec_per_call,
            "call_usec": d.call_usec,
            "held": d.held.json(),
        },
        "chunks": f.swept.iter().map(|x| x.json()).collect::<Vec<_>>(),
        "drop": f.dropped.iter().map(|x| x.json()).collect::<Vec<_>>(),
        "server_config": f.lazyfree.iter().map(|(k, v)| (k.clone(), json!(v))).collect::<serde_json::Map<_, _>>(),
    })
}
