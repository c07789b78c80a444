//! The sandbox's memory of red packets it saw sold out or expired (`GonePackets`, one per
//! [`Store`](crate::store::Store)), and the grab that answers from it with one `HGET`.
//!
//! The rule (when a remembered answer still holds) is
//! [`crate::packets::rules::gone`]; this module keeps the observations and reads the grabs
//! hash. Only untargeted packets are remembered: a targeted packet answers `not_a_recipient`
//! before `sold_out` or `expired`, which needs its recipients set (`grab.lua` says which
//! answers are rememberable by adding the packet's `expires_at` to them).
//!
//! Nothing here can move money: a remembered packet is answered with a read, never a write,
//! and an entry only ever narrows the answer to `already_grabbed` (the share the grabs hash
//! holds), `sold_out` or `expired`. The worst a remembered answer can do, after a failover
//! that lost the last grabs of a packet (without `REDIS_WAIT_REPLICAS`), is answer `sold_out`
//! for up to [`MAX_READING_AGE`](crate::packets::rules::gone::MAX_READING_AGE) while shares
//! are back; settlement refunds those at expiry. The cost, written down in `grab.lua`: a
//! remembered packet's repeat is not counted by the grab rate limit (the limiter's check would
//! cost Redis more than the `HGET` that answers it).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use crate::packets::rules::gone::{SoldOutSeen, Verdict};

/// At most this many packets are remembered per sandbox (about 100 bytes each); when full, the
/// entries that can no longer answer are dropped, and if none can, all of them.
const MAX_ENTRIES: usize = 10_000;

/// What a sandbox saw of one packet.
#[derive(Debug, Clone, Copy)]
enum Seen {
    /// `sold_out`, as the grab call sent at `sent` and answered at `answered` read it.
    SoldOut {
        reading: SoldOutSeen,
        sent: Instant,
        answered: Instant,
    },
    /// `expired` (or settled): final.
    Expired,
}

impl Seen {
    fn verdict(&self, now: Instant) -> Verdict {
        match self {
            Seen::Expired => Verdict::Expired,
            Seen::SoldOut {
                reading,
                sent,
                answered,
            } => reading.verdict(now - *sent, now - *answered),
        }
    }
}

/// The packets this sandbox saw sold out or expired, by packet id (ids are 80 random bits under
/// the sender's tag: a re-created packet has a new id, so it is never answered from an old
/// packet's entry).
#[derive(Debug, Default)]
pub(crate) struct GonePackets {
    seen: Mutex<HashMap<String, Seen>>,
}

impl GonePackets {
    fn with<T>(&self, f: impl FnOnce(&mut HashMap<String, Seen>) -> T) -> T {
        f(&mut self.seen.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// What may be answered about `packet_id` without the script: `None` when it is not
    /// remembered; an entry found surely expired becomes final.
    pub(crate) fn verdict(&self, packet_id: &str) -> Option<Verdict> {
        let now = Instant::now();
        self.with(|seen| {
            let entry = seen.get_mut(packet_id)?;
            let verdict = entry.verdict(now);
            if verdict == Verdict::Expired {
                *entry = Seen::Expired;
            }
            Some(verdict)
        })
    }

    /// Whether `packet_id` is remembered (it existed when this sandbox saw it).
    pub(crate) fn knows(&self, packet_id: &str) -> bool {
        self.with(|seen| seen.contains_key(packet_id))
    }

    /// Remembers a `sold_out` answer of the call sent at `sent` and answered at `answered`.
    pub(crate) fn sold_out(
        &self,
        packet_id: &str,
        reading: SoldOutSeen,
        sent: Instant,
        answered: Instant,
    ) {
        self.insert(
            packet_id,
            Seen::SoldOut {
                reading,
                sent,
                answered,
            },
        );
    }

    /// Remembers that `packet_id` expired (or was settled).
    pub(crate) fn expired(&self, packet_id: &str) {
        self.insert(packet_id, Seen::Expired);
    }

    fn insert(&self, packet_id: &str, entry: Seen) {
        let now = Instant::now();
        self.with(|seen| {
            if seen.len() >= MAX_ENTRIES && !seen.contains_key(packet_id) {
                seen.retain(|_, e| e.verdict(now) != Verdict::AskTheScript);
                if seen.len() >= MAX_ENTRIES {
                    seen.clear();
                }
            }
            // Expired is final: a late sold-out answer (sent before) does not undo it.
            if !matches!(seen.get(packet_id), Some(Seen::Expired)) {
                seen.insert(packet_id.to_string(), entry);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn reading(expires_in_ms: i64) -> SoldOutSeen {
        SoldOutSeen {
            expires_at_ms: 1_000_000 + expires_in_ms,
            redis_now_ms: 1_000_000,
        }
    }

    #[test]
    fn remembers_sold_out_then_expired_for_good() {
        let gone = GonePackets::default();
        assert_eq!(gone.verdict("p"), None);
        let t = Instant::now();
        gone.sold_out("p", reading(60_000), t, t);
        assert_eq!(gone.verdict("p"), Some(Verdict::SoldOut));
        assert!(gone.knows("p") && !gone.knows("q"));
        gone.expired("p");
        assert_eq!(gone.verdict("p"), Some(Verdict::Expired));
        gone.sold_out("p", reading(60_000), t, t);
        assert_eq!(
            gone.verdict("p"),
            Some(Verdict::Expired),
            "expired is final"
        );
    }

    #[test]
    fn a_reading_past_expiry_turns_final() {
        let gone = GonePackets::default();
        let t = Instant::now() - Duration::from_millis(50);
        gone.sold_out("p", reading(10), t, t);
        assert_eq!(gone.verdict("p"), Some(Verdict::Expired));
        assert!(matches!(gone.with(|s| s["p"]), Seen::Expired));
    }

    #[test]
    fn a_full_memory_drops_what_cannot_answer() {
        let gone = GonePackets::default();
        let old = Instant::now() - Duration::from_secs(60);
        for i in 0..MAX_ENTRIES {
            gone.sold_out(&format!("old{i}"), reading(3_600_000), old, old);
        }
        gone.expired("old0");
        let t = Instant::now();
        gone.sold_out("new", reading(3_600_000), t, t);
        assert_eq!(gone.with(|s| s.len()), 2, "old0 (expired) and new");
        assert_eq!(gone.verdict("new"), Some(Verdict::SoldOut));
    }
}
