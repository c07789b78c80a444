//! The soak's report: what ran and how it ended, and on a violation the faults and operations
//! around the first one, then the failure.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::checker;
use super::clients::Record;
use super::export::ExportStats;
use super::Log;

/// The figures of a soak run.
pub struct Report<'a> {
    pub seed: u64,
    pub secs: u64,
    /// When the nemesis healed.
    pub healed: Instant,
    /// The quiesce phases: (what, ended at since healed).
    pub phases: &'a [(&'a str, Duration)],
    /// Faults injected per kind.
    pub faults: &'a BTreeMap<String, u64>,
    /// The ledger-export runs during the faults.
    pub exports: &'a ExportStats,
    /// What clients sent and were answered, ambiguous operations resolved.
    pub history: &'a [Record],
    /// Ambiguous operations resolved after healing, per kind.
    pub resolved: &'a BTreeMap<&'static str, u64>,
    /// Packets settled by reclaim-cron after healing.
    pub settled: u64,
    /// Packets in the final state.
    pub packets: usize,
    /// Events the feed received.
    pub events: usize,
    /// Journal entries: the feed's events de-duplicated.
    pub journal: usize,
    pub violations: &'a [String],
}

impl Report<'_> {
    /// Prints the report.
    pub fn print(&self) {
        let (seed, secs, history) = (self.seed, self.secs, self.history);
        let mut per_kind: BTreeMap<&str, BTreeMap<String, u64>> = BTreeMap::new();
        let mut ambiguous: BTreeMap<&str, u64> = BTreeMap::new();
        for r in history {
            let outcome = match &r.answer {
                Some((s, b)) => format!("{s} {}", checker::code(b)),
                None => "unanswered".to_string(),
            };
            *per_kind
                .entry(r.op.kind())
                .or_default()
                .entry(outcome)
                .or_default() += 1;
            if r.ambiguous() {
                *ambiguous.entry(r.op.kind()).or_default() += 1;
            }
        }
        println!(
            "soak report: seed {seed}, {secs} s of faults, healed and quiesced in {:?}",
            self.healed.elapsed()
        );
        println!("quiesce phases (ended at, since healed): {:?}", self.phases);
        println!("faults injected per kind: {:?}", self.faults);
        println!("ledger-export runs during the faults: {:?}", self.exports);
        println!("operations per kind and final answer: {per_kind:#?}");
        println!("ambiguous operations (a 5xx or a killed sandbox on some attempt): {ambiguous:?}");
        // Operations never answered below 500 until the deadline: the last error they got.
        let mut unanswered: BTreeMap<(&str, String), u64> = BTreeMap::new();
        for r in history.iter().filter(|r| r.answer.is_none()) {
            let last = r.attempts.last().map_or_else(
                || "no attempt".to_string(),
                |a| match (&a.status, &a.error) {
                    (Some(s), Some((code, message))) => format!("{s} {code}: {message}"),
                    (Some(s), None) => s.to_string(),
                    (None, _) => "sandbox killed".to_string(),
                },
            );
            *unanswered.entry((r.op.kind(), last)).or_default() += 1;
        }
        println!("unanswered operations by their last answer: {unanswered:#?}");
        println!(
            "resolved after healing by sending them again: {:?}",
            self.resolved
        );
        println!(
            "packets: {}, settled by reclaim-cron after healing: {}",
            self.packets, self.settled
        );
        println!(
            "journal entries (the feed's {} events, de-duplicated): {}, violations: {}",
            self.events,
            self.journal,
            self.violations.len()
        );
    }

    /// On a violation: prints the first (with the replay command), up to 20 others, and the
    /// log's last 40 lines and the log lines and operations naming the first one's ids
    /// (`users` tells user ids apart), then panics.
    pub fn fail_on_a_violation(&self, users: &[String], log: &Log) {
        let (seed, secs, violations) = (self.seed, self.secs, self.violations);
        let Some(first) = violations.first() else {
            return;
        };
        let ids = checker::ids_in(first, users);
        let lines = log.lines.lock().unwrap();
        println!(
            "FIRST VIOLATION (seed {seed}; replay: make soak SEED={seed} SECS={secs}): {first}"
        );
        for v in violations.iter().skip(1).take(20) {
            println!("  also: {v}");
        }
        println!("faults and killed requests in the log ({} lines), the last 40 and those naming {ids:?}:", lines.len());
        for (at, line) in lines.iter().rev().take(40).rev() {
            println!("  {at:>7} ms  {line}");
        }
        for (at, line) in lines
            .iter()
            .filter(|(_, l)| ids.iter().any(|i| l.contains(i.as_str())))
        {
            println!("  {at:>7} ms  {line}");
        }
        for r in self
            .history
            .iter()
            .filter(|r| {
                ids.iter()
                    .any(|i| format!("{:?}", r.op).contains(i.as_str()))
            })
            .take(40)
        {
            println!(
                "  client {} {:?} attempts {:?} answer {:?}",
                r.client, r.op, r.attempts, r.answer
            );
        }
        panic!(
            "soak seed {seed}: {} violations; first: {first}",
            violations.len()
        );
    }
}
