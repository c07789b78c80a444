//! Reclaim-cron's rules: how many due packets one step reads and how long its lock lives
//! (`HONGBAO_RECLAIM_*`). The refund itself is `lua/settle.lua`, driven by
//! [`crate::store::reclaim`].

use super::settings::{self, Setting};
use super::{ConfigError, Lookup};

/// `HONGBAO_RECLAIM_BATCH`.
pub const RECLAIM_BATCH: Setting = Setting {
    name: "HONGBAO_RECLAIM_BATCH",
    default: "500",
    meaning: "due packets per batch (≥ 1); a run takes batches until none is due or its time is up",
};
/// `HONGBAO_RECLAIM_LOCK_TTL_MS`.
pub const RECLAIM_LOCK_TTL_MS: Setting = Setting {
    name: "HONGBAO_RECLAIM_LOCK_TTL_MS",
    default: "55000",
    meaning: "reclaim lock lifetime, ms (≥ 1000)",
};

/// A phantom index entry (no packet) is dropped only this long after its due time, so a
/// create-packet still in flight can never lose its index entry.
pub const PHANTOM_GRACE_MS: i64 = 60_000;

/// How long after its index entry was written (Redis `TIME` of the index's node) a
/// `create_packet.lua` call may still create its packet, ms; a later delivery creates nothing
/// (`late`). An entry is never due before it was written, and a phantom is dropped
/// [`PHANTOM_GRACE_MS`] after its due time, so a packet is always created well before its entry
/// could be dropped: the other half of the grace absorbs the difference between the two nodes'
/// clocks.
pub const CREATE_WINDOW_MS: i64 = PHANTOM_GRACE_MS / 2;

/// The reclaim settings, in the order of docs/configuration.md.
pub const RECLAIM_SETTINGS: &[Setting] = &[RECLAIM_BATCH, RECLAIM_LOCK_TTL_MS];

/// How reclaim-cron works through expired packets (reclaim-cron reads it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReclaimRules {
    /// Due packets one reclaim step reads from the index (`HONGBAO_RECLAIM_BATCH`, ≥ 1).
    pub batch: usize,
    /// Reclaim lock lifetime, milliseconds (`HONGBAO_RECLAIM_LOCK_TTL_MS`, ≥ 1000); a run
    /// stops taking batches 5 s before it.
    pub lock_ttl_ms: u64,
}

impl Default for ReclaimRules {
    fn default() -> Self {
        Self::from_lookup(&settings::defaults()).expect("the defaults are valid")
    }
}

impl ReclaimRules {
    /// Reads [`RECLAIM_SETTINGS`].
    ///
    /// # Errors
    /// [`ConfigError`] naming the variable that does not parse or breaks a bound.
    pub fn from_lookup(lookup: &Lookup<'_>) -> Result<Self, ConfigError> {
        Ok(ReclaimRules {
            batch: lookup.at_least(&RECLAIM_BATCH, 1)?,
            lock_ttl_ms: lookup.at_least(&RECLAIM_LOCK_TTL_MS, 1000)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_validated_and_named() {
        assert_eq!(ReclaimRules::default().batch, 500);
        assert_eq!(ReclaimRules::default().lock_ttl_ms, 55_000);
        for (name, value) in [
            ("HONGBAO_RECLAIM_BATCH", "0"),
            ("HONGBAO_RECLAIM_LOCK_TTL_MS", "0"),
            ("HONGBAO_RECLAIM_LOCK_TTL_MS", "999"),
        ] {
            let f = move |n: &str| (n == name).then(|| value.to_string());
            let err = ReclaimRules::from_lookup(&Lookup::new(&f)).unwrap_err();
            assert_eq!(err.name, name, "{name}={value}");
        }
    }
}
