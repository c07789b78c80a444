//! The red-packet lifecycle: create, grab, view and claim.
//!
//! Every operation is one or more Lua scripts; each script touches one hash slot. See
//! [`crate::keys`] for the key layout and `lua/*.lua` for the atomic steps.

use std::collections::HashMap;

use redis::Value;

use crate::error::Error;
use crate::keys::{is_packet_id, new_packet_id, Keys};
use crate::scripts::{self, int, text, texts};
use crate::split::{self, LuckySplit, Mode};
use crate::store::Store;
use crate::wallet::{self, Credit};

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
    /// Optional greeting, at most 100 characters.
    pub greeting: Option<String>,
}

impl NewPacket {
    /// A SHA-1 hex fingerprint of the request, stored with its `Idempotency-Key` so a reused
    /// key with a different body can be told apart.
    pub fn fingerprint(&self) -> String {
        let canonical = format!(
            "{}|{}|{}|{}|{}|{}",
            self.total_cents,
            self.count,
            self.mode.as_str(),
            self.split_name().unwrap_or("-"),
            self.expires_in_secs,
            self.greeting.as_deref().unwrap_or("\u{0}")
        );
        sha1_smol::Sha1::from(canonical.as_bytes())
            .digest()
            .to_string()
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
    /// [`Error::Internal`] for any other shape.
    pub fn parse(record: &str) -> Result<Self, Error> {
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
            _ => Err(Error::Internal(format!("bad share record {record:?}"))),
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
}

impl Packet {
    fn from_fields(fields: &HashMap<String, String>) -> Result<Self, Error> {
        let s = |k: &str| {
            fields
                .get(k)
                .cloned()
                .ok_or_else(|| Error::Internal(format!("packet field {k} missing")))
        };
        let n = |k: &str| -> Result<i64, Error> {
            s(k)?
                .parse()
                .map_err(|_| Error::Internal(format!("packet field {k} not an integer")))
        };
        let mode: Mode = s("mode")?
            .parse()
            .map_err(|_| Error::Internal("bad packet mode".into()))?;
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
                        .map_err(|_| Error::Internal("bad packet split".into()))?,
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

/// One grab as listed by [`view`].
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

/// The outcome of [`create`].
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
}

/// Creates a red packet paid from `sender_id`'s wallet.
///
/// The amounts are split here with the thread CSPRNG and stored; grabs pop them. The packet is
/// first put into the reclaim index (a separate hash slot) and then created together with the
/// debit in one script, so a crash between the two leaves only a phantom index entry (which
/// reclaim-cron drops); when the script refuses (funds, idempotency), the entry is withdrawn.
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached (the packet may or may not exist:
/// retry with the same `Idempotency-Key`).
pub async fn create(
    store: &Store,
    sender_id: &str,
    req: &NewPacket,
    idempotency_key: Option<&str>,
) -> Result<CreateOutcome, Error> {
    let cfg = store.config();
    let keys = Keys::new(&cfg.key_prefix);
    let amounts = split::split(
        req.total_cents,
        req.count,
        req.mode,
        req.split,
        &mut rand::rng(),
    )
    .map_err(|e| Error::Internal(format!("split of a validated request failed: {e}")))?;
    let mut conn = store.conn().await?;
    let wk = keys.wallet(sender_id);
    let record_id = idempotency_key.map(|k| format!("create:{k}"));
    for _ in 0..3 {
        let packet_id = new_packet_id(sender_id);
        // 1 if this call indexed the id, 0 if the id was already indexed (drawn twice).
        let indexed: i64 = scripts::DUE_ADD
            .key(keys.reclaim_due())
            .arg(&packet_id)
            .arg(req.expires_in_secs)
            .invoke_async(&mut conn)
            .await?;
        let pk = keys.packet(&packet_id);
        let mut inv = scripts::CREATE_PACKET.key(&wk.wallet);
        inv.key(&wk.ledger)
            .key(&wk.records)
            .key(&wk.records_forget)
            .key(&pk.meta)
            .key(&pk.shares)
            .key(keys.legacy_create_idempotency(sender_id, idempotency_key.unwrap_or("-")))
            .arg(&packet_id)
            .arg(sender_id)
            .arg(req.total_cents)
            .arg(req.count)
            .arg(req.mode.as_str())
            .arg(req.split_name().unwrap_or(""))
            .arg(req.greeting.as_deref().unwrap_or(""))
            .arg(req.expires_in_secs)
            .arg(req.fingerprint())
            .arg(record_id.as_deref().unwrap_or(""))
            .arg(cfg.idempotency_ttl_secs * 1000)
            .arg(crate::config::LEDGER_CAP)
            .arg(&amounts);
        let reply = texts("create_packet", inv.invoke_async::<Value>(&mut conn).await?)?;
        let outcome = reply.first().map(String::as_str);
        // A refused request (funds, idempotency) created nothing under this id: withdraw the
        // index entry this call added, so it leaves no trace. Never when the id belongs to an
        // existing packet (`id_taken`) or the entry was there before this call (`indexed` 0):
        // that entry guards another packet's refund. (If the withdrawal fails, reclaim-cron
        // drops the phantom entry later.)
        if indexed == 1 && !matches!(outcome, Some("created") | Some("id_taken")) {
            let removed: Result<i64, _> = redis::cmd("ZREM")
                .arg(keys.reclaim_due())
                .arg(&packet_id)
                .query_async(&mut conn)
                .await;
            if let Err(e) = removed {
                tracing::warn!(%e, packet_id, "could not withdraw a phantom reclaim index entry");
            }
        }
        match outcome {
            Some("created") => return Ok(CreateOutcome::Created(load(store, &packet_id).await?)),
            Some("repeat") => {
                let id = reply.get(1).cloned().unwrap_or_default();
                return Ok(CreateOutcome::Repeat(load(store, &id).await?));
            }
            Some("insufficient_funds") => {
                return Ok(CreateOutcome::InsufficientFunds {
                    balance_cents: int("create_packet", reply.get(1))?,
                })
            }
            Some("idempotency_key_reused") => return Ok(CreateOutcome::IdempotencyKeyReused),
            Some("id_taken") => continue,
            _ => return Err(Error::bad_reply("create_packet", format!("{reply:?}"))),
        }
    }
    Err(Error::Internal("could not draw an unused packet id".into()))
}

/// Loads a packet's fields (no grabs).
///
/// # Errors
/// [`Error::Internal`] if it does not exist (callers use this right after creating it).
async fn load(store: &Store, packet_id: &str) -> Result<Packet, Error> {
    match view(store, packet_id).await? {
        Some(v) => Ok(v.packet),
        None => Err(Error::Internal(format!("packet {packet_id} vanished"))),
    }
}

/// Reads a consistent snapshot of a packet (one script), or `None` if there is no such packet
/// (including ids of the wrong shape).
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached.
pub async fn view(store: &Store, packet_id: &str) -> Result<Option<PacketView>, Error> {
    if !is_packet_id(packet_id) {
        return Ok(None);
    }
    let keys = Keys::new(&store.config().key_prefix).packet(packet_id);
    let mut conn = store.conn().await?;
    let reply: Value = scripts::PACKET_VIEW
        .key(&keys.meta)
        .key(&keys.grabs)
        .key(&keys.order)
        .key(&keys.claims)
        .invoke_async(&mut conn)
        .await?;
    let Value::Array(parts) = reply else {
        return Err(Error::bad_reply("packet_view", format!("{reply:?}")));
    };
    if parts.is_empty() {
        return Ok(None);
    }
    let mut parts = parts.into_iter();
    let mut next = || {
        parts
            .next()
            .ok_or_else(|| Error::bad_reply("packet_view", "short reply"))
    };
    let pairs = |v: Vec<String>| -> HashMap<String, String> {
        let mut m = HashMap::with_capacity(v.len() / 2);
        let mut it = v.into_iter();
        while let (Some(k), Some(val)) = (it.next(), it.next()) {
            m.insert(k, val);
        }
        m
    };
    let meta = pairs(texts("packet_view", next()?)?);
    let grabs = pairs(texts("packet_view", next()?)?);
    let order = texts("packet_view", next()?)?;
    let claims = pairs(texts("packet_view", next()?)?);
    let now_ms: i64 = text("packet_view", next()?)?
        .parse()
        .map_err(|_| Error::bad_reply("packet_view", "time"))?;
    let packet = Packet::from_fields(&meta)?;
    let mut list = Vec::with_capacity(order.len());
    for user in order {
        let record = grabs
            .get(&user)
            .ok_or_else(|| Error::Internal(format!("grab of {user} missing")))?;
        let claimed = claims.contains_key(&user);
        list.push(Grab {
            share: Share::parse(record)?,
            user_id: user,
            claimed,
        });
    }
    let status = if packet.settled {
        Status::Settled
    } else if now_ms >= packet.expires_at_ms {
        Status::Expired
    } else if packet.grabbed_count >= packet.count {
        Status::SoldOut
    } else {
        Status::Open
    };
    let best_luck = if packet.grabbed_count >= packet.count {
        best_luck(&list)
    } else {
        None
    };
    Ok(Some(PacketView {
        packet,
        status,
        grabs: list,
        best_luck,
    }))
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

/// The outcome of [`grab`].
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
}

/// Grabs at most one share of `packet_id` for `user_id`, in one round trip (one EVALSHA),
/// subject to the per-user, per-packet rate limit of the configuration.
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached: the grab may have happened; a retry
/// answers [`GrabOutcome::AlreadyGrabbed`] with the same share.
pub async fn grab(store: &Store, packet_id: &str, user_id: &str) -> Result<GrabOutcome, Error> {
    if !is_packet_id(packet_id) {
        return Ok(GrabOutcome::NotFound);
    }
    let cfg = store.config();
    let keys = Keys::new(&cfg.key_prefix);
    let pk = keys.packet(packet_id);
    let mut conn = store.conn().await?;
    let reply: Value = scripts::GRAB
        .key(&pk.meta)
        .key(&pk.shares)
        .key(&pk.grabs)
        .key(&pk.order)
        .key(keys.grab_rate(packet_id, user_id))
        .arg(user_id)
        .arg(cfg.grab_rate_limit)
        .arg(cfg.grab_rate_window_ms)
        .invoke_async(&mut conn)
        .await?;
    let reply = texts("grab", reply)?;
    Ok(match reply.first().map(String::as_str) {
        Some("grabbed") => GrabOutcome::Grabbed {
            share: Share::parse(reply.get(1).map(String::as_str).unwrap_or(""))?,
            claim_by_ms: int("grab", reply.get(2))?,
        },
        Some("already_grabbed") => GrabOutcome::AlreadyGrabbed(Share::parse(
            reply.get(1).map(String::as_str).unwrap_or(""),
        )?),
        Some("not_found") => GrabOutcome::NotFound,
        Some("rate_limited") => GrabOutcome::RateLimited {
            retry_after_ms: int("grab", reply.get(1))?,
        },
        Some("expired") => GrabOutcome::Expired,
        Some("sold_out") => GrabOutcome::SoldOut,
        _ => return Err(Error::bad_reply("grab", format!("{reply:?}"))),
    })
}

/// The outcome of [`claim`].
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

/// Claims `user_id`'s share of `packet_id` into their wallet, exactly once.
///
/// Four idempotent steps: reserve on the packet's slot (`claim.lua`), credit the grabber's
/// wallet once per transfer id `claim:<packet_id>` (`wallet_credit.lua`, another slot; the
/// credit record is pinned, never forgotten while the claim is pending), mark done
/// (`claim_done.lua`), un-pin the credit record (`transfer_release.lua`). Any retry or
/// concurrent call re-drives the remaining steps.
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached; retrying is safe.
pub async fn claim(store: &Store, packet_id: &str, user_id: &str) -> Result<ClaimOutcome, Error> {
    if !is_packet_id(packet_id) {
        return Ok(ClaimOutcome::NotFound);
    }
    let cfg = store.config();
    let pk = Keys::new(&cfg.key_prefix).packet(packet_id);
    let mut conn = store.conn().await?;
    let reply: Value = scripts::CLAIM
        .key(&pk.meta)
        .key(&pk.grabs)
        .key(&pk.claims)
        .arg(user_id)
        .invoke_async(&mut conn)
        .await?;
    let reply = texts("claim", reply)?;
    let (share, state) = match reply.first().map(String::as_str) {
        Some("claimed") => (
            Share::parse(reply.get(1).map(String::as_str).unwrap_or(""))?,
            reply.get(2).cloned().unwrap_or_default(),
        ),
        Some("not_found") => return Ok(ClaimOutcome::NotFound),
        Some("no_share") => return Ok(ClaimOutcome::NoShare),
        Some("expired") => return Ok(ClaimOutcome::Expired),
        _ => return Err(Error::bad_reply("claim", format!("{reply:?}"))),
    };
    let (pending, claimed_at_ms) = parse_claim_state(&state)?;
    let (balance_cents, repeat) = if pending {
        let credited = redrive_claim(store, packet_id, user_id, share.amount_cents).await?;
        (credited.balance_cents, !credited.applied)
    } else {
        // Done before: step 4 again (idempotent) in case the earlier call stopped before it.
        (
            wallet::release_claim_record(store, user_id, packet_id).await?,
            true,
        )
    };
    Ok(ClaimOutcome::Claimed {
        share,
        balance_cents,
        claimed_at_ms,
        repeat,
    })
}

/// Parses a claim state `pending:<ms>` / `done:<ms>` into (pending, claimed_at_ms).
fn parse_claim_state(state: &str) -> Result<(bool, i64), Error> {
    let (kind, at) = state
        .split_once(':')
        .ok_or_else(|| Error::Internal(format!("bad claim state {state:?}")))?;
    let at = at
        .parse()
        .map_err(|_| Error::Internal(format!("bad claim state {state:?}")))?;
    match kind {
        "pending" => Ok((true, at)),
        "done" => Ok((false, at)),
        _ => Err(Error::Internal(format!("bad claim state {state:?}"))),
    }
}

/// Claim step 2's transfer: `amount_cents` of `packet_id` into the grabber's wallet, with the
/// transfer id [`wallet::claim_transfer_id`] and the amount as fingerprint. Its record is
/// pinned (`keep_ms` 0, never forgotten while the claim can be re-driven) and it is never
/// refused for the balance limit (the money already exists; refusing would strand it).
pub fn claim_credit<'a>(
    packet_id: &'a str,
    transfer_id: &'a str,
    amount_cents: i64,
    fingerprint: &'a str,
) -> wallet::Transfer<'a> {
    wallet::Transfer {
        transfer_id,
        amount_cents,
        kind: wallet::EntryKind::ClaimCredit,
        reference: packet_id,
        fingerprint,
        keep_ms: 0,
        balance_limit_cents: 0,
    }
}

/// Claim steps 2 to 4 for a pending claim: credit the grabber once (record pinned), mark the
/// claim done, un-pin the record. Used by [`claim`] and by reclaim-cron.
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached; the claim stays pending and a later
/// call finishes it.
pub async fn redrive_claim(
    store: &Store,
    packet_id: &str,
    user_id: &str,
    amount_cents: i64,
) -> Result<Credit, Error> {
    let cfg = store.config();
    let transfer_id = wallet::claim_transfer_id(packet_id);
    let fingerprint = amount_cents.to_string();
    let mut credited = wallet::credit(
        store,
        user_id,
        &claim_credit(packet_id, &transfer_id, amount_cents, &fingerprint),
    )
    .await?;
    if credited.conflict {
        return Err(Error::Internal(format!(
            "transfer {transfer_id} for {user_id} conflicts"
        )));
    }
    let claims = Keys::new(&cfg.key_prefix).packet(packet_id).claims;
    let mut conn = store.conn().await?;
    let _: i64 = scripts::CLAIM_DONE
        .key(claims)
        .arg(user_id)
        .invoke_async(&mut conn)
        .await?;
    credited.balance_cents = wallet::release_claim_record(store, user_id, packet_id).await?;
    Ok(credited)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        };
        let mut b = a.clone();
        b.greeting = Some(String::new());
        assert_ne!(a.fingerprint(), b.fingerprint());
        let mut c = a.clone();
        c.split = LuckySplit::LineCut;
        assert_ne!(a.fingerprint(), c.fingerprint());
        assert_eq!(a.fingerprint(), a.clone().fingerprint());
    }
}
