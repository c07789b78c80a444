//! Red packets as pure rules: a request and its limits ([`PacketRules::check`]), shares,
//! packets and their status, and the outcome of each operation. The atomic steps are
//! `lua/create_packet.lua`, `lua/grab.lua`, `lua/claim.lua` (and `lua/claim_done.lua`,
//! `lua/wallet_credit.lua`, `lua/transfer_release.lua`) called by [`crate::store::packets`].

use std::collections::HashMap;

use serde::Deserialize;

use super::settings::Setting;
use super::split::{LuckySplit, Mode};
use super::{BadRecord, ConfigError, Invalid, Lookup};

/// The longest a packet may stay open: 7 days, in seconds (the API's `expires_in_secs` bound).
pub const MAX_EXPIRES_IN_SECS: u64 = 604_800;

/// Default `expires_in_secs`: one day.
pub const DEFAULT_EXPIRES_IN_SECS: u64 = 86_400;

/// Most recipients of a targeted packet.
pub const MAX_RECIPIENTS: usize = 500;

/// The longest greeting, characters.
pub const MAX_GREETING_CHARS: usize = 100;

/// `HONGBAO_MAX_COUNT`.
pub const MAX_COUNT: Setting = Setting {
    name: "HONGBAO_MAX_COUNT",
    default: "10000",
    meaning: "most shares per packet (at most `HONGBAO_MAX_TOTAL_CENTS`: every share is ≥ 1 cent)",
};
/// `HONGBAO_MAX_TOTAL_CENTS`.
pub const MAX_TOTAL_CENTS: Setting = Setting {
    name: "HONGBAO_MAX_TOTAL_CENTS",
    default: "20000",
    meaning: "largest packet total, cents",
};
/// `HONGBAO_GRAB_RATE_LIMIT`.
pub const GRAB_RATE_LIMIT: Setting = Setting {
    name: "HONGBAO_GRAB_RATE_LIMIT",
    default: "10",
    meaning: "repeated grabs (after the win) per user per packet per window; `0` disables",
};
/// `HONGBAO_PACKETS_PER_MINUTE`.
pub const PACKETS_PER_MINUTE: Setting = Setting {
    name: "HONGBAO_PACKETS_PER_MINUTE",
    default: "10",
    meaning: "red packets a sender may create per minute (a fixed window opened by the first create; 429 + `Retry-After` beyond it, nothing written); `0` disables",
};
/// The window of [`PACKETS_PER_MINUTE`], milliseconds.
pub const PACKETS_WINDOW_MS: u64 = 60_000;
/// `HONGBAO_GRAB_RATE_WINDOW_MS`.
pub const GRAB_RATE_WINDOW_MS: Setting = Setting {
    name: "HONGBAO_GRAB_RATE_WINDOW_MS",
    default: "1000",
    meaning: "rate-limit window, ms (≥ 1)",
};
/// `HONGBAO_RETENTION_SECS`.
pub const RETENTION_SECS: Setting = Setting {
    name: "HONGBAO_RETENTION_SECS",
    default: "604800",
    meaning: "how long settled packets' keys are kept, s (a value below `HONGBAO_IDEMPOTENCY_TTL_SECS` is raised to it)",
};
/// `HONGBAO_IDEMPOTENCY_TTL_SECS`.
pub const IDEMPOTENCY_TTL_SECS: Setting = Setting {
    name: "HONGBAO_IDEMPOTENCY_TTL_SECS",
    default: "86400",
    meaning:
        "how long an `Idempotency-Key` (and a done claim's credit record) is remembered, s (≥ 1)",
};

/// The red-packet settings, in README order.
pub const SETTINGS: &[Setting] = &[
    MAX_COUNT,
    MAX_TOTAL_CENTS,
    GRAB_RATE_LIMIT,
    GRAB_RATE_WINDOW_MS,
    PACKETS_PER_MINUTE,
    RETENTION_SECS,
    IDEMPOTENCY_TTL_SECS,
];

/// The configured limits of red packets (create-packet, grab, claim and reclaim-cron read them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PacketRules {
    /// Most shares in one packet (`HONGBAO_MAX_COUNT`, ≥ 1).
    pub max_count: u32,
    /// Largest packet total, cents (`HONGBAO_MAX_TOTAL_CENTS`, ≥ `max_count`).
    pub max_total_cents: i64,
    /// Repeated grabs (the win is not counted) per user and packet per window; 0 disables the
    /// limit.
    pub grab_rate_limit: u32,
    /// Grab rate-limit window, milliseconds (≥ 1).
    pub grab_rate_window_ms: u64,
    /// Packets a sender may create per minute ([`PACKETS_WINDOW_MS`]); 0 disables the quota.
    pub packets_per_minute: u32,
    /// Seconds a settled packet's keys are kept (≥ `idempotency_ttl_secs`).
    pub retention_secs: u64,
    /// Seconds a create-packet `Idempotency-Key` is remembered, and a done claim's credit
    /// record (≥ 1).
    pub idempotency_ttl_secs: u64,
}

impl Default for PacketRules {
    fn default() -> Self {
        Self::from_lookup(&super::settings::defaults()).expect("the defaults are valid")
    }
}

impl PacketRules {
    /// Reads [`SETTINGS`].
    ///
    /// # Errors
    /// [`ConfigError`] naming the variable that does not parse or breaks a bound.
    pub fn from_lookup(lookup: &Lookup<'_>) -> Result<Self, ConfigError> {
        let rules = PacketRules {
            max_count: lookup.at_least(&MAX_COUNT, 1)?,
            max_total_cents: lookup.at_least(&MAX_TOTAL_CENTS, 1i64)?,
            grab_rate_limit: lookup.get(&GRAB_RATE_LIMIT)?,
            grab_rate_window_ms: lookup.at_least(&GRAB_RATE_WINDOW_MS, 1)?,
            packets_per_minute: lookup.get(&PACKETS_PER_MINUTE)?,
            retention_secs: lookup.get(&RETENTION_SECS)?,
            idempotency_ttl_secs: lookup.at_least(&IDEMPOTENCY_TTL_SECS, 1)?,
        };
        // Two bounds that follow from others are applied, not refused, so that every
        // combination template.yaml accepts boots (CloudFormation Rules cannot compare
        // numbers): every share is at least 1 cent, so no packet can have more shares than
        // the largest total has cents; and a retried create must find the packet its
        // Idempotency-Key names, so packets are kept at least as long as the key.
        let mut rules = rules;
        if rules.max_total_cents < i64::from(rules.max_count) {
            rules.max_count = u32::try_from(rules.max_total_cents).unwrap_or(rules.max_count);
        }
        rules.retention_secs = rules.retention_secs.max(rules.idempotency_ttl_secs);
        Ok(rules)
    }

    /// Milliseconds a claim's credit record is kept once the claim is done (claim step 4
    /// un-pins it; until then it is kept for ever): `HONGBAO_IDEMPOTENCY_TTL_SECS`, far longer
    /// than any request that saw the claim pending can still be running (a Lambda invocation
    /// lasts at most 15 minutes).
    pub fn claim_record_keep_ms(&self) -> u64 {
        self.idempotency_ttl_secs * 1000
    }

    /// Checks a create request against the contract and these limits.
    ///
    /// # Errors
    /// [`Invalid`] naming the offending field.
    pub fn check(&self, req: PacketRequest) -> Result<NewPacket, Invalid> {
        let mode = req.mode.unwrap_or(Mode::Lucky);
        if !(1..=i64::from(self.max_count)).contains(&req.count) {
            return Err(Invalid(format!("count must be 1..={}", self.max_count)));
        }
        if !(req.count..=self.max_total_cents).contains(&req.total_cents) {
            return Err(Invalid(format!(
                "total_cents must be count..={} (every share is at least 1 cent)",
                self.max_total_cents
            )));
        }
        if mode == Mode::Fixed && req.total_cents % req.count != 0 {
            return Err(Invalid::new(
                "a fixed packet needs total_cents divisible by count",
            ));
        }
        if mode == Mode::Fixed && req.split.is_some() {
            return Err(Invalid::new("split applies to lucky packets only"));
        }
        let expires = req
            .expires_in_secs
            .unwrap_or(DEFAULT_EXPIRES_IN_SECS as i64);
        if !(1..=MAX_EXPIRES_IN_SECS as i64).contains(&expires) {
            return Err(Invalid(format!(
                "expires_in_secs must be 1..={MAX_EXPIRES_IN_SECS}"
            )));
        }
        let recipients = match req.recipients {
            None => Vec::new(),
            Some(ids) => {
                if !(1..=MAX_RECIPIENTS).contains(&ids.len()) {
                    return Err(Invalid(format!(
                        "recipients must hold 1 to {MAX_RECIPIENTS} user ids"
                    )));
                }
                if let Some(bad) = ids.iter().find(|id| !super::is_user_id(id)) {
                    return Err(Invalid(format!(
                        "recipient {:?} is not a user id (1 to {} printable characters)",
                        bad.chars().take(64).collect::<String>(),
                        super::MAX_USER_ID_CHARS
                    )));
                }
                let mut sorted = ids;
                sorted.sort();
                let n = sorted.len();
                sorted.dedup();
                if sorted.len() != n {
                    return Err(Invalid::new("recipients must be distinct"));
                }
                if req.count as usize > sorted.len() {
                    return Err(Invalid::new(
                        "count must not exceed the number of recipients (each may grab one share)",
                    ));
                }
                sorted
            }
        };
        if let Some(g) = &req.greeting {
            if g.chars().count() > MAX_GREETING_CHARS {
                return Err(Invalid(format!(
                    "greeting must be at most {MAX_GREETING_CHARS} characters"
                )));
            }
            super::check_shown_text("greeting", g)?;
        }
        Ok(NewPacket {
            total_cents: req.total_cents,
            count: req.count as u32,
            mode,
            split: req.split.unwrap_or(LuckySplit::DoubleMean),
            expires_in_secs: expires as u64,
            greeting: req.greeting.filter(|g| !g.is_empty()),
            recipients,
        })
    }
}

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

/// The reclaim settings, in README order.
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
        Self::from_lookup(&super::settings::defaults()).expect("the defaults are valid")
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

/// A create request as the client sent it (the body of `POST /packets`), before
/// [`PacketRules::check`]. Unknown fields are refused.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PacketRequest {
    /// Total, cents.
    pub total_cents: i64,
    /// Number of shares.
    pub count: i64,
    /// `lucky` (default) or `fixed`.
    #[serde(default)]
    pub mode: Option<Mode>,
    /// The lucky split algorithm (default `double_mean`).
    #[serde(default)]
    pub split: Option<LuckySplit>,
    /// Seconds until the packet expires (default one day).
    #[serde(default)]
    pub expires_in_secs: Option<i64>,
    /// Optional greeting.
    #[serde(default)]
    pub greeting: Option<String>,
    /// Optional: the only users who may grab (a targeted packet), 1 to [`MAX_RECIPIENTS`]
    /// distinct user ids; the sender may be one of them.
    #[serde(default)]
    pub recipients: Option<Vec<String>>,
}

/// The prefix of a [`NewPacket::fingerprint`] in its current (v2) encoding.
pub const FINGERPRINT_V2: &str = "v2:";

/// A validated request to create a red packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewPacket {
    /// Total amount, cents (`count..=HONGBAO_MAX_TOTAL_CENTS`).
    pub total_cents: i64,
    /// Number of shares (`1..=HONGBAO_MAX_COUNT`).
    pub count: u32,
    /// Lucky (random amounts) or fixed (equal amounts).
    pub mode: Mode,
    /// The lucky split algorithm; ignored (and reported as `None`) for fixed packets.
    pub split: LuckySplit,
    /// Seconds until the packet expires (`1..=604800`).
    pub expires_in_secs: u64,
    /// Optional greeting, at most 100 characters, none of them control or invisible format
    /// characters ([`super::check_shown_text`]).
    pub greeting: Option<String>,
    /// A targeted packet's recipients, sorted and distinct (at least `count` of them); empty:
    /// anyone may grab. Enforced inside `lua/grab.lua`.
    pub recipients: Vec<String>,
}

impl NewPacket {
    /// The request's fingerprint, stored with its `Idempotency-Key` so that a reused key with
    /// another body is told apart (409 `idempotency_key_reused`): `v2:` and the SHA-256 hex of
    /// a canonical encoding that is injective by construction. Every field is a netstring
    /// (`<byte length>:<bytes>,`, D. J. Bernstein's netstrings), in a fixed order: total,
    /// count, mode, split (empty for fixed), expiry, the greeting after a presence tag (`0`, or
    /// `1` and the greeting), the number of recipients and each recipient (sorted, distinct).
    /// A field's length says where it ends, so no greeting or user id can pass for another
    /// field, whatever characters it holds (in v1, a greeting `hi|alice` and a greeting `hi`
    /// for recipient `alice` had the same fingerprint).
    pub fn fingerprint(&self) -> String {
        use sha2::{Digest, Sha256};
        use std::fmt::Write;
        let mut canonical = String::new();
        let mut put = |field: &str| {
            let _ = write!(canonical, "{}:{},", field.len(), field);
        };
        put(&self.total_cents.to_string());
        put(&self.count.to_string());
        put(self.mode.as_str());
        put(self.split_name().unwrap_or(""));
        put(&self.expires_in_secs.to_string());
        match &self.greeting {
            None => put("0"),
            Some(greeting) => {
                put("1");
                put(greeting);
            }
        }
        put(&self.recipients.len().to_string());
        for recipient in &self.recipients {
            put(recipient);
        }
        let mut out = String::from(FINGERPRINT_V2);
        for b in Sha256::digest(canonical.as_bytes()) {
            let _ = write!(out, "{b:02x}");
        }
        out
    }

    /// The fingerprint releases before v2 stored (the fields joined with `|`, the recipients
    /// with a newline after them, SHA-1 hex), so that a create retried across the upgrade,
    /// within `HONGBAO_IDEMPOTENCY_TTL_SECS`, still finds its packet: `Some` only when that
    /// old text is unambiguous for this request, i.e. the request has no recipients and its
    /// greeting no `|`. Its old text then has exactly five `|` (numbers and names hold none),
    /// which fix all six fields, while a targeted request's text has at least six; and a
    /// greeting cannot hold the "\u{0}" that stood for none (control characters are
    /// refused). Any other request compares in the v2 form only: an old record then answers
    /// 409, never another request's packet.
    pub fn legacy_fingerprint(&self) -> Option<String> {
        if !self.recipients.is_empty() || self.greeting.as_deref().is_some_and(|g| g.contains('|'))
        {
            return None;
        }
        let canonical = format!(
            "{}|{}|{}|{}|{}|{}",
            self.total_cents,
            self.count,
            self.mode.as_str(),
            self.split_name().unwrap_or("-"),
            self.expires_in_secs,
            self.greeting.as_deref().unwrap_or("\u{0}")
        );
        use sha1::{Digest, Sha1};
        Some(
            Sha1::digest(canonical.as_bytes())
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect(),
        )
    }

    /// The split name stored for this packet: `None` for fixed packets.
    pub fn split_name(&self) -> Option<&'static str> {
        match self.mode {
            Mode::Fixed => None,
            Mode::Lucky => Some(self.split.as_str()),
        }
    }
}

/// One grabbed share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Share {
    /// 1 for the first share grabbed, `count` for the last.
    pub share_id: u32,
    /// Amount, cents.
    pub amount_cents: i64,
    /// When it was grabbed, Unix milliseconds (Redis `TIME`).
    pub grabbed_at_ms: i64,
}

impl Share {
    /// Parses a share record `share_id:amount_cents:grabbed_at_ms`.
    ///
    /// # Errors
    /// [`BadRecord`] for any other shape.
    pub fn parse(record: &str) -> Result<Self, BadRecord> {
        let mut it = record.splitn(3, ':');
        let mut next = || it.next().and_then(|s| s.parse::<i64>().ok());
        match (next(), next(), next()) {
            (Some(id), Some(amount), Some(at)) if id > 0 && id <= i64::from(u32::MAX) => {
                Ok(Share {
                    share_id: id as u32,
                    amount_cents: amount,
                    grabbed_at_ms: at,
                })
            }
            _ => Err(BadRecord(format!("bad share record {record:?}"))),
        }
    }
}

/// A red packet's stored fields and counters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet {
    /// 24 hex digits: the sender's wallet tag, then 20 random digits.
    pub packet_id: String,
    /// Who paid for it.
    pub sender_id: String,
    /// Total, cents.
    pub total_cents: i64,
    /// Number of shares.
    pub count: u32,
    /// Lucky or fixed.
    pub mode: Mode,
    /// Lucky split algorithm; `None` for fixed packets.
    pub split: Option<LuckySplit>,
    /// Greeting, if any.
    pub greeting: Option<String>,
    /// Creation time, Unix ms (Redis `TIME`).
    pub created_at_ms: i64,
    /// Deadline for grabs and claims, Unix ms (Redis `TIME`).
    pub expires_at_ms: i64,
    /// Whether reclaim-cron has refunded it.
    pub settled: bool,
    /// Shares grabbed so far.
    pub grabbed_count: u32,
    /// Sum of grabbed shares, cents.
    pub grabbed_cents: i64,
    /// Sum of claimed shares (credited or being credited), cents.
    pub claimed_cents: i64,
    /// Refunded to the sender at settlement, cents.
    pub refunded_cents: i64,
    /// A targeted packet's number of recipients; 0: anyone may grab.
    pub recipient_count: u32,
}

impl Packet {
    /// A packet from its stored hash fields (`packet_id`, `sender_id`, `total_cents`, `count`,
    /// `mode`, `split`, `greeting`, `created_at`, `expires_at`, `status`, the counters).
    ///
    /// # Errors
    /// [`BadRecord`] when a field is missing or not of its type.
    pub fn from_fields(fields: &HashMap<String, String>) -> Result<Self, BadRecord> {
        let s = |k: &str| {
            fields
                .get(k)
                .cloned()
                .ok_or_else(|| BadRecord(format!("packet field {k} missing")))
        };
        let n = |k: &str| -> Result<i64, BadRecord> {
            s(k)?
                .parse()
                .map_err(|_| BadRecord(format!("packet field {k} not an integer")))
        };
        let mode: Mode = s("mode")?
            .parse()
            .map_err(|_| BadRecord("bad packet mode".into()))?;
        let split_raw = s("split")?;
        let greeting = s("greeting")?;
        Ok(Packet {
            packet_id: s("packet_id")?,
            sender_id: s("sender_id")?,
            total_cents: n("total_cents")?,
            count: n("count")? as u32,
            mode,
            split: if split_raw.is_empty() {
                None
            } else {
                Some(
                    split_raw
                        .parse()
                        .map_err(|_| BadRecord("bad packet split".into()))?,
                )
            },
            greeting: (!greeting.is_empty()).then_some(greeting),
            created_at_ms: n("created_at")?,
            expires_at_ms: n("expires_at")?,
            settled: s("status")? == "settled",
            grabbed_count: n("grabbed_count")? as u32,
            grabbed_cents: n("grabbed_cents")?,
            claimed_cents: n("claimed_cents")?,
            refunded_cents: n("refunded_cents")?,
            recipient_count: match fields.get("recipients") {
                None => 0,
                Some(_) => n("recipients")? as u32,
            },
        })
    }
}

/// What a packet looks like to `GET /packets/{id}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Shares left and not expired.
    Open,
    /// Every share grabbed, not expired yet.
    SoldOut,
    /// Past `expires_at`, not yet refunded.
    Expired,
    /// Refunded by reclaim-cron.
    Settled,
}

impl Status {
    /// The status of `packet` at Redis time `now_ms` (Unix ms): settled, else expired once
    /// `expires_at` has passed, else sold out once every share is grabbed, else open.
    pub fn at(packet: &Packet, now_ms: i64) -> Self {
        if packet.settled {
            Status::Settled
        } else if now_ms >= packet.expires_at_ms {
            Status::Expired
        } else if packet.grabbed_count >= packet.count {
            Status::SoldOut
        } else {
            Status::Open
        }
    }

    /// The JSON name: `open`, `sold_out`, `expired`, `settled`.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Open => "open",
            Status::SoldOut => "sold_out",
            Status::Expired => "expired",
            Status::Settled => "settled",
        }
    }
}

/// One grab as listed by [`crate::store::packets::view`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grab {
    /// The grabber.
    pub user_id: String,
    /// Their share.
    pub share: Share,
    /// Whether they claimed it (credited or being credited).
    pub claimed: bool,
}

/// A consistent snapshot of a packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PacketView {
    /// Fields and counters.
    pub packet: Packet,
    /// Status at the snapshot's Redis `TIME`.
    pub status: Status,
    /// Grabs in grab order.
    pub grabs: Vec<Grab>,
    /// The largest share once every share is grabbed (ties: the earlier grab), else `None`.
    pub best_luck: Option<(String, i64)>,
}

/// The outcome of [`crate::store::packets::create`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CreateOutcome {
    /// Created and paid for now.
    Created(Packet),
    /// The same `Idempotency-Key` and request were seen before: the earlier packet, no new debit.
    Repeat(Packet),
    /// The sender's balance (cents) is below the total; nothing changed.
    InsufficientFunds {
        /// Current balance, cents.
        balance_cents: i64,
    },
    /// The `Idempotency-Key` was used before with a different request; nothing changed.
    IdempotencyKeyReused,
    /// The sender created `HONGBAO_PACKETS_PER_MINUTE` packets in the open window; nothing
    /// changed.
    RateLimited {
        /// Milliseconds until the window closes (≥ 1).
        retry_after_ms: i64,
    },
}

/// The largest share in grab order; ties go to the earlier grab.
pub fn best_luck(grabs: &[Grab]) -> Option<(String, i64)> {
    let mut best: Option<&Grab> = None;
    for g in grabs {
        if best.is_none_or(|b| g.share.amount_cents > b.share.amount_cents) {
            best = Some(g);
        }
    }
    best.map(|g| (g.user_id.clone(), g.share.amount_cents))
}

/// The outcome of [`crate::store::packets::grab`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GrabOutcome {
    /// The caller got this share now; claim it before `claim_by_ms` (Unix ms).
    Grabbed {
        /// The share.
        share: Share,
        /// The packet's `expires_at`, Unix ms.
        claim_by_ms: i64,
    },
    /// The caller grabbed this share before (repeated or concurrent grabs all see it).
    AlreadyGrabbed(Share),
    /// No such packet.
    NotFound,
    /// Too many attempts in the window; retry after this many milliseconds.
    RateLimited {
        /// Milliseconds until an attempt is allowed again.
        retry_after_ms: i64,
    },
    /// Past `expires_at` (Redis `TIME`) or settled.
    Expired,
    /// Every share is taken.
    SoldOut,
    /// A targeted packet and the caller is not one of its recipients; nothing written.
    NotARecipient,
}

/// The outcome of [`crate::store::packets::claim`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimOutcome {
    /// The share is in the caller's wallet.
    Claimed {
        /// The share.
        share: Share,
        /// The caller's balance after the credit (or now, for a repeat), cents.
        balance_cents: i64,
        /// When the claim was accepted, Unix ms (Redis `TIME`).
        claimed_at_ms: i64,
        /// `true` when an earlier call already credited it (nothing credited now).
        repeat: bool,
    },
    /// No such packet.
    NotFound,
    /// The caller grabbed nothing from this packet.
    NoShare,
    /// The claim window closed (`expires_at` passed or the packet was refunded).
    Expired,
}

/// Parses a claim state `pending:<ms>` / `done:<ms>` into (pending, claimed_at_ms).
pub(crate) fn parse_claim_state(state: &str) -> Result<(bool, i64), BadRecord> {
    let (kind, at) = state
        .split_once(':')
        .ok_or_else(|| BadRecord(format!("bad claim state {state:?}")))?;
    let at = at
        .parse()
        .map_err(|_| BadRecord(format!("bad claim state {state:?}")))?;
    match kind {
        "pending" => Ok((true, at)),
        "done" => Ok((false, at)),
        _ => Err(BadRecord(format!("bad claim state {state:?}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(name: &'static str, value: &'static str) -> Result<PacketRules, ConfigError> {
        let f = move |n: &str| (n == name).then(|| value.to_string());
        PacketRules::from_lookup(&Lookup::new(&f))
    }

    #[test]
    fn settings_are_validated_and_named() {
        let d = PacketRules::default();
        assert_eq!((d.max_count, d.max_total_cents), (10_000, 20_000));
        assert_eq!((d.grab_rate_limit, d.grab_rate_window_ms), (10, 1000));
        assert_eq!(
            (d.retention_secs, d.idempotency_ttl_secs),
            (604_800, 86_400)
        );
        assert_eq!(ReclaimRules::default().batch, 500);
        for (name, value) in [
            ("HONGBAO_MAX_COUNT", "0"),
            ("HONGBAO_MAX_TOTAL_CENTS", "0"),
            ("HONGBAO_IDEMPOTENCY_TTL_SECS", "0"),
            ("HONGBAO_GRAB_RATE_WINDOW_MS", "0"),
            ("HONGBAO_GRAB_RATE_LIMIT", "-1"),
        ] {
            assert_eq!(rules(name, value).unwrap_err().name, name, "{name}={value}");
        }
        assert_eq!(
            rules("HONGBAO_RETENTION_SECS", "86400")
                .unwrap()
                .retention_secs,
            86_400
        );
        // Bounds that follow from others are applied, not refused: no more shares than the
        // largest total has cents, packets kept at least as long as their Idempotency-Key.
        assert_eq!(
            rules("HONGBAO_MAX_TOTAL_CENTS", "9999").unwrap().max_count,
            9_999
        );
        assert_eq!(
            rules("HONGBAO_RETENTION_SECS", "3600")
                .unwrap()
                .retention_secs,
            86_400
        );
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

    #[test]
    fn share_records() {
        let s = Share::parse("3:125:1700000000123").unwrap();
        assert_eq!(
            (s.share_id, s.amount_cents, s.grabbed_at_ms),
            (3, 125, 1_700_000_000_123)
        );
        assert!(Share::parse("x:1:2").is_err());
        assert!(Share::parse("0:1:2").is_err());
    }

    #[test]
    fn best_luck_ties_go_to_the_earlier_grab() {
        let g = |u: &str, a| Grab {
            user_id: u.into(),
            share: Share {
                share_id: 1,
                amount_cents: a,
                grabbed_at_ms: 0,
            },
            claimed: false,
        };
        assert_eq!(
            best_luck(&[g("a", 5), g("b", 9), g("c", 9)]),
            Some(("b".into(), 9))
        );
        assert_eq!(best_luck(&[]), None);
    }

    #[test]
    fn claim_states() {
        assert_eq!(parse_claim_state("pending:12").unwrap(), (true, 12));
        assert_eq!(parse_claim_state("done:13").unwrap(), (false, 13));
        assert!(parse_claim_state("x").is_err());
    }

    #[test]
    fn fingerprint_depends_on_every_field() {
        let a = NewPacket {
            total_cents: 100,
            count: 2,
            mode: Mode::Lucky,
            split: LuckySplit::DoubleMean,
            expires_in_secs: 60,
            greeting: None,
            recipients: Vec::new(),
        };
        let mut b = a.clone();
        b.greeting = Some(String::new());
        assert_ne!(a.fingerprint(), b.fingerprint());
        let mut c = a.clone();
        c.split = LuckySplit::LineCut;
        assert_ne!(a.fingerprint(), c.fingerprint());
        assert_eq!(a.fingerprint(), a.clone().fingerprint());
        assert!(a.fingerprint().starts_with(FINGERPRINT_V2));
    }

    /// The v1 collision: a greeting holding the separator of the v1 text, against a
    /// targeted packet; and the like between recipients and greetings.
    #[test]
    fn fingerprint_is_injective_where_v1_collided() {
        let base = NewPacket {
            total_cents: 100,
            count: 1,
            mode: Mode::Lucky,
            split: LuckySplit::DoubleMean,
            expires_in_secs: 86_400,
            greeting: Some("hi|alice".into()),
            recipients: Vec::new(),
        };
        let targeted = NewPacket {
            greeting: Some("hi".into()),
            recipients: vec!["alice".into()],
            ..base.clone()
        };
        let shifted = NewPacket {
            greeting: Some("hi|x".into()),
            recipients: vec!["y".into()],
            ..base.clone()
        };
        let piped_id = NewPacket {
            greeting: Some("hi".into()),
            recipients: vec!["x|y".into()],
            ..base.clone()
        };
        let fps = [&base, &targeted, &shifted, &piped_id].map(NewPacket::fingerprint);
        for (i, a) in fps.iter().enumerate() {
            for b in &fps[i + 1..] {
                assert_ne!(a, b);
            }
        }
        // The v1 text of the first two is the same; neither may be compared in it.
        assert_eq!(base.legacy_fingerprint(), None);
        assert_eq!(targeted.legacy_fingerprint(), None);
        let plain = NewPacket {
            greeting: Some("hi".into()),
            ..base.clone()
        };
        // The v1 fingerprint of an unambiguous request, as releases before v2 computed it:
        // SHA-1 of "100|1|lucky|double_mean|86400|hi" (Python's hashlib).
        assert_eq!(
            plain.legacy_fingerprint().as_deref(),
            Some("0f39b8155815fb6ec8bd9be13435af6815964aeb")
        );
        assert_ne!(plain.legacy_fingerprint().unwrap(), plain.fingerprint());
    }
}
