//! The red-packet lifecycle: create, grab, view and claim.
//!
//! Every operation is one or more Lua scripts; each script touches one hash slot. See
//! [`super::keys`] for the key layout and `lua/*.lua` for the atomic steps.

use std::collections::HashMap;
use std::time::Instant;

use redis::Value;

use crate::domain::history::{year_of, ReceivedEntry, YearBounds};
use crate::domain::packets::gone::{SoldOutSeen, Verdict};
use crate::domain::packets::password::Password;
pub use crate::domain::packets::{
    best_luck, CancelOutcome, ClaimOutcome, CreateOutcome, Grab, GrabOutcome, NewPacket, Packet,
    PacketView, Reveal, Share, Status,
};
use crate::domain::packets::{parse_claim_state, receipt, PACKETS_WINDOW_MS};
use crate::domain::split;

use super::keys::{is_packet_id, new_packet_id, Keys};
use super::scripts::{
    int, text, texts, Call, ClaimCall, ClaimDoneCall, CreatePacketCall, DueAddCall, GrabCall,
    PacketViewCall,
};
use super::wallet::{self, Credit};
use super::{Error, Store};
use crate::domain::packets::CREATE_WINDOW_MS;

mod cancel;
pub(crate) mod gone;

pub use cancel::cancel;

/// Creates a red packet paid from `sender_id`'s wallet, and its entry in the sender's sent
/// history (same script).
///
/// The amounts are split here with the thread CSPRNG and stored; grabs pop them. The packet is
/// first put into the reclaim index (a separate hash slot) and then created together with the
/// debit in one script, so a crash between the two leaves only a phantom index entry (which
/// reclaim-cron drops a minute after its due time). Each call draws a fresh packet id; a run of
/// the script that finds that id made by this call answers as the first run did (a cluster
/// client re-sends a command whose reply was lost), and the script creates nothing once it is
/// delivered [`CREATE_WINDOW_MS`] after the index entry was written. When the script refuses
/// (funds, idempotency, quota), the entry is not removed but brought forward, so reclaim-cron
/// drops it soon: a late first run of the same call may still create the packet.
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
    // The fairness receipt: the shares are committed to before the first grab can see any.
    let salt = receipt::new_salt(&mut rand::rng());
    let commitment = receipt::commitment(&salt, &amounts);
    let mut conn = store.conn().await?;
    let wk = keys.wallet(sender_id);
    let record_id = idempotency_key.map(|k| format!("create:{k}"));
    // The script dates the sent history entry by its own Redis TIME; these bounds cover a
    // year either side of this function's clock.
    let year_bounds = YearBounds::around(&cfg.history.tz, now_ms()).arg();
    let fingerprint = match req.legacy_fingerprint() {
        Some(v1) => format!("{} {v1}", req.fingerprint()),
        None => req.fingerprint(),
    };
    let recipient_ids = req.recipients.join("\n");
    let legacy_record = keys.legacy_create_idempotency(sender_id, idempotency_key.unwrap_or("-"));
    let due = keys.reclaim_due();
    for _ in 0..3 {
        let packet_id = new_packet_id(sender_id);
        // (1, Redis TIME) if this call indexed the id; (0, _) if the id was already indexed
        // (drawn twice, or this call re-sent after a lost reply).
        let (indexed, indexed_at_ms): (i64, i64) = DueAddCall {
            due: &due,
            packet_id: &packet_id,
            expires_in_secs: req.lifetime_secs(),
        }
        .invocation()
        .invoke_async(&mut conn)
        .await?;
        let pk = keys.packet(&packet_id);
        let verifier = req
            .password
            .as_ref()
            .map(|p| p.verifier(&packet_id))
            .unwrap_or_default();
        let call = CreatePacketCall {
            wallet: &wk.wallet,
            ledger: &wk.ledger,
            records: &wk.records,
            records_forget: &wk.records_forget,
            meta: &pk.meta,
            shares: &pk.shares,
            legacy_record: &legacy_record,
            creates: &wk.creates,
            recipients: &pk.recipients,
            sent: &wk.sent,
            received: &wk.received,
            history_totals: &wk.history_totals,
            journal: &wk.journal,
            packet_id: &packet_id,
            sender_id,
            total_cents: req.total_cents,
            count: req.count,
            mode: req.mode.as_str(),
            split: req.split_name().unwrap_or(""),
            greeting: req.greeting.as_deref().unwrap_or(""),
            expires_in_secs: req.expires_in_secs,
            fingerprint: &fingerprint,
            record_id: record_id.as_deref().unwrap_or(""),
            record_keep_ms: cfg.packets.idempotency_ttl_secs * 1000,
            ledger_cap: crate::domain::wallet::LEDGER_CAP,
            packets_per_window: cfg.packets.packets_per_minute,
            window_ms: PACKETS_WINDOW_MS,
            recipient_ids: &recipient_ids,
            history_retention_ms: cfg.history.retention_ms,
            year_bounds: &year_bounds,
            indexed_at_ms,
            delivery_window_ms: CREATE_WINDOW_MS,
            opens_in_secs: req.opens_in_secs,
            cover: req.cover.as_deref().unwrap_or(""),
            salt: &salt,
            commitment: &commitment,
            password: &verifier,
            share_amounts: &amounts,
        };
        let reply = texts(
            "create_packet",
            call.invocation().invoke_async::<Value>(&mut conn).await?,
        )?;
        let outcome = reply.first().map(String::as_str);
        // A refusal is never a reason to remove the index entry: the answer may come from a
        // re-sent run while the first run of this call, delivered late, still creates the
        // packet within its window. The entry is moved to `indexed_at_ms` instead, so
        // reclaim-cron looks at the id soon: it drops the entry once it has been a phantom
        // for PHANTOM_GRACE_MS (well after the window closed), and moves it to the packet's
        // expiry if the packet exists. Never for an entry this call did not add (`indexed` 0)
        // or an id that belongs to another packet (`id_taken`): that entry guards a refund.
        if indexed == 1 && !matches!(outcome, Some("created") | Some("id_taken")) {
            let moved: Result<i64, _> = redis::cmd("ZADD")
                .arg(&due)
                .arg("XX")
                .arg("LT")
                .arg(indexed_at_ms)
                .arg(&packet_id)
                .query_async(&mut conn)
                .await;
            if let Err(e) = moved {
                tracing::warn!(%e, packet_id, "could not bring a refused create's reclaim index entry forward");
            }
        }
        match outcome {
            Some("created") => return Ok(CreateOutcome::Created(load(store, &packet_id).await?)),
            Some("repeat") => {
                let id = reply.get(1).cloned().unwrap_or_default();
                let earlier = load(store, &id).await?;
                // The fingerprint says only whether there is a password (the password is
                // stored nowhere but as the packet's verifier): a repeat must also carry the
                // same password, compared by its verifier under the earlier packet's salt.
                let same_password = match (&req.password, &earlier.password_verifier) {
                    (None, None) => true,
                    (Some(p), Some(v)) => &p.verifier(&id) == v,
                    _ => false,
                };
                return Ok(if same_password {
                    CreateOutcome::Repeat(earlier)
                } else {
                    CreateOutcome::IdempotencyKeyReused
                });
            }
            Some("insufficient_funds") => {
                return Ok(CreateOutcome::InsufficientFunds {
                    balance_cents: int("create_packet", reply.get(1))?,
                })
            }
            Some("idempotency_key_reused") => return Ok(CreateOutcome::IdempotencyKeyReused),
            Some("rate_limited") => {
                return Ok(CreateOutcome::RateLimited {
                    retry_after_ms: int("create_packet", reply.get(1))?,
                })
            }
            Some("id_taken") => continue,
            // Delivered after its window (held up in the network): nothing was created; the
            // caller's create did not happen and may be retried.
            Some("stale") => {
                return Err(Error::Unavailable(
                    "create_packet was delivered after its window; nothing was created".into(),
                ))
            }
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
/// (including ids of the wrong shape). No access check: see [`view_as`].
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached.
pub async fn view(store: &Store, packet_id: &str) -> Result<Option<PacketView>, Error> {
    Ok(snapshot(store, packet_id, "").await?.map(|(v, _)| v))
}

/// What `viewer` may see of a packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ViewAs {
    /// The snapshot (boxed: a packet view is a few hundred bytes, the other answers none).
    Found(Box<PacketView>),
    /// No such packet.
    NotFound,
    /// A targeted packet, and `viewer` is neither its sender nor one of its recipients.
    Forbidden,
}

/// [`view`] for `viewer`: a targeted packet is shown only to its sender and recipients;
/// the recipient check is part of the same snapshot script.
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached.
pub async fn view_as(store: &Store, packet_id: &str, viewer: &str) -> Result<ViewAs, Error> {
    Ok(match snapshot(store, packet_id, viewer).await? {
        None => ViewAs::NotFound,
        Some((v, recipient)) => {
            if v.packet.recipient_count == 0 || recipient || v.packet.sender_id == viewer {
                ViewAs::Found(Box::new(v))
            } else {
                ViewAs::Forbidden
            }
        }
    })
}

/// The snapshot of `packet_id` and whether `viewer` is one of its recipients.
async fn snapshot(
    store: &Store,
    packet_id: &str,
    viewer: &str,
) -> Result<Option<(PacketView, bool)>, Error> {
    if !is_packet_id(packet_id) {
        return Ok(None);
    }
    let keys = Keys::new(&store.config().key_prefix).packet(packet_id);
    let mut conn = store.conn().await?;
    let reply: Value = PacketViewCall {
        meta: &keys.meta,
        grabs: &keys.grabs,
        claims: &keys.claims,
        recipients: &keys.recipients,
        shares: &keys.shares,
        viewer,
    }
    .invocation()
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
    let claims = pairs(texts("packet_view", next()?)?);
    let now_ms: i64 = text("packet_view", next()?)?
        .parse()
        .map_err(|_| Error::bad_reply("packet_view", "time"))?;
    let recipient = int("packet_view", Some(&text("packet_view", next()?)?))? == 1;
    let ungrabbed = texts("packet_view", next()?)?;
    let packet = Packet::from_fields(&meta)?;
    // Share ids count from 1 in grab order: they are the grab order.
    let mut list = Vec::with_capacity(grabs.len());
    for (user, record) in grabs {
        list.push(Grab {
            share: Share::parse(&record)?,
            claimed: claims.contains_key(&user),
            user_id: user,
        });
    }
    list.sort_unstable_by_key(|g| g.share.share_id);
    if let Some((i, g)) = (1..).zip(&list).find(|(i, g)| g.share.share_id != *i) {
        return Err(Error::Internal(format!(
            "packet {packet_id}: grab records skip or repeat share id {i} (found {})",
            g.share.share_id
        )));
    }
    let status = Status::at(&packet, now_ms);
    let best_luck = if packet.grabbed_count >= packet.count {
        best_luck(&list)
    } else {
        None
    };
    let reveal = match (&packet.salt, status.reveals()) {
        (Some(salt), true) => reveal(packet_id, &packet, salt, &list, &ungrabbed),
        _ => None,
    };
    Ok(Some((
        PacketView {
            packet,
            status,
            grabs: list,
            best_luck,
            reveal,
        },
        recipient,
    )))
}

/// The fairness receipt's reveal of a packet that no grab can change any more: the grabbed
/// shares in share-id order, then the un-grabbed ones in list order (the order they would have
/// been grabbed in), `count` in all. `None`, logged, when the records do not add up to `count`
/// shares (a packet settled by a release that deleted the share list at settlement): the view
/// still answers, without a reveal.
fn reveal(
    packet_id: &str,
    packet: &Packet,
    salt: &str,
    grabs: &[Grab],
    ungrabbed: &[String],
) -> Option<Reveal> {
    let mut shares_cents: Vec<i64> = grabs.iter().map(|g| g.share.amount_cents).collect();
    shares_cents.extend(ungrabbed.iter().filter_map(|a| a.parse::<i64>().ok()));
    if shares_cents.len() != packet.count as usize {
        tracing::warn!(
            packet_id,
            recorded = shares_cents.len(),
            count = packet.count,
            "the packet's shares do not add up to its count: no reveal"
        );
        return None;
    }
    Some(Reveal {
        salt: salt.to_string(),
        shares_cents,
    })
}

/// Grabs at most one share of `packet_id` for `user_id`, in one round trip: one EVALSHA of
/// `grab.lua`, subject to the per-user, per-packet rate limit of the configuration; or, for a
/// packet this sandbox saw sold out or expired, one `HGET` of its grabs hash (`store/packets/gone.rs`).
///
/// A remembered packet answers [`GrabOutcome::AlreadyGrabbed`] with the caller's share if the
/// grabs hash holds one (not counted by the rate limit: the `HGET` costs Redis less than the
/// limiter would), else [`GrabOutcome::SoldOut`], or [`GrabOutcome::Expired`] once Redis `TIME`
/// has surely reached `expires_at` (the last moments before it go to the script). Once the
/// packet's keys have expired after settlement, a sandbox that remembers it answers
/// [`GrabOutcome::Expired`], never a share and never [`GrabOutcome::NotFound`].
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached: the grab may have happened; a retry
/// answers [`GrabOutcome::AlreadyGrabbed`] with the same share.
pub async fn grab(store: &Store, packet_id: &str, user_id: &str) -> Result<GrabOutcome, Error> {
    grab_with_password(store, packet_id, user_id, None).await
}

/// [`grab`] with the password the grabber sent (a password packet refuses a grab without its
/// password: [`GrabOutcome::WrongPassword`]). Only the password's verifier for this packet
/// leaves this function.
///
/// # Errors
/// As [`grab`].
pub async fn grab_with_password(
    store: &Store,
    packet_id: &str,
    user_id: &str,
    password: Option<&Password>,
) -> Result<GrabOutcome, Error> {
    if !is_packet_id(packet_id) {
        return Ok(GrabOutcome::NotFound);
    }
    let cfg = store.config();
    let keys = Keys::new(&cfg.key_prefix);
    let pk = keys.packet(packet_id);
    let mut conn = store.conn().await?;
    let gone = store.gone_packets();
    let remembered = match gone.verdict(packet_id) {
        Some(Verdict::SoldOut) => Some(GrabOutcome::SoldOut),
        Some(Verdict::Expired) => Some(GrabOutcome::Expired),
        Some(Verdict::AskTheScript) | None => None,
    };
    if let Some(otherwise) = remembered {
        let mine: Option<String> = redis::cmd("HGET")
            .arg(&pk.grabs)
            .arg(user_id)
            .query_async(&mut conn)
            .await?;
        return Ok(match mine {
            Some(record) => GrabOutcome::AlreadyGrabbed(Share::parse(&record)?),
            None => otherwise,
        });
    }
    let sent = Instant::now();
    let reply: Value = GrabCall {
        meta: &pk.meta,
        shares: &pk.shares,
        grabs: &pk.grabs,
        rate: &keys.grab_rate(packet_id, user_id),
        recipients: &pk.recipients,
        user_id,
        rate_limit: cfg.packets.grab_rate_limit,
        rate_window_ms: cfg.packets.grab_rate_window_ms,
        password: &password.map(|p| p.verifier(packet_id)).unwrap_or_default(),
        call_id: &format!("{:08x}", rand::random::<u32>()),
    }
    .invocation()
    .invoke_async(&mut conn)
    .await?;
    let answered = Instant::now();
    let reply = text("grab", reply)?;
    let (outcome, data) = reply.split_once(':').unwrap_or((reply.as_str(), ""));
    let bad = || Error::bad_reply("grab", &reply);
    Ok(match outcome {
        "grabbed" => {
            let (record, claim_by) = data.rsplit_once(':').ok_or_else(bad)?;
            GrabOutcome::Grabbed {
                share: Share::parse(record)?,
                claim_by_ms: claim_by.parse().map_err(|_| bad())?,
            }
        }
        "already_grabbed" => GrabOutcome::AlreadyGrabbed(Share::parse(data)?),
        // The packet existed when this sandbox saw it gone: its keys have expired since.
        "not_found" if gone.knows(packet_id) => GrabOutcome::Expired,
        "not_found" => GrabOutcome::NotFound,
        "rate_limited" => GrabOutcome::RateLimited {
            retry_after_ms: data.parse().map_err(|_| bad())?,
        },
        "expired" => {
            if !data.is_empty() {
                gone.expired(packet_id);
            }
            GrabOutcome::Expired
        }
        "sold_out" => {
            if let Some((expires_at, now)) = data.split_once(':') {
                let reading = SoldOutSeen {
                    expires_at_ms: expires_at.parse().map_err(|_| bad())?,
                    redis_now_ms: now.parse().map_err(|_| bad())?,
                };
                gone.sold_out(packet_id, reading, sent, answered);
            }
            GrabOutcome::SoldOut
        }
        "not_a_recipient" => GrabOutcome::NotARecipient,
        "cancelled" => GrabOutcome::Cancelled,
        "wrong_password" => GrabOutcome::WrongPassword,
        "not_open_yet" => {
            let (opens_at, now) = data.split_once(':').ok_or_else(bad)?;
            let opens_at_ms: i64 = opens_at.parse().map_err(|_| bad())?;
            let now_ms: i64 = now.parse().map_err(|_| bad())?;
            GrabOutcome::NotOpenYet {
                opens_at_ms,
                retry_after_ms: (opens_at_ms - now_ms).max(1),
            }
        }
        _ => return Err(bad()),
    })
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
    let reply: Value = ClaimCall {
        meta: &pk.meta,
        grabs: &pk.grabs,
        claims: &pk.claims,
        user_id,
    }
    .invocation()
    .invoke_async(&mut conn)
    .await?;
    let reply = texts("claim", reply)?;
    let (share, state, sender_id) = match reply.first().map(String::as_str) {
        Some("claimed") => (
            Share::parse(reply.get(1).map(String::as_str).unwrap_or(""))?,
            reply.get(2).cloned().unwrap_or_default(),
            reply
                .get(3)
                .cloned()
                .ok_or_else(|| Error::bad_reply("claim", "no sender"))?,
        ),
        Some("not_found") => return Ok(ClaimOutcome::NotFound),
        Some("no_share") => return Ok(ClaimOutcome::NoShare),
        Some("expired") => return Ok(ClaimOutcome::Expired),
        _ => return Err(Error::bad_reply("claim", format!("{reply:?}"))),
    };
    let (pending, claimed_at_ms) = parse_claim_state(&state)?;
    let (balance_cents, repeat) = if pending {
        let credited =
            redrive_claim(store, packet_id, &sender_id, user_id, &share, claimed_at_ms).await?;
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

/// Claim step 2's transfer: `amount_cents` of `packet_id` into the grabber's wallet, with the
/// transfer id [`wallet::claim_transfer_id`] and the amount as fingerprint, and the grabber's
/// received history entry `history_entry`. Its record is pinned (`keep_ms` 0, never forgotten
/// while the claim can be re-driven) and it is never refused for the balance limit (the money
/// already exists; refusing would strand it).
pub fn claim_credit<'a>(
    packet_id: &'a str,
    transfer_id: &'a str,
    amount_cents: i64,
    fingerprint: &'a str,
    history_entry: &'a str,
) -> wallet::Transfer<'a> {
    wallet::Transfer {
        transfer_id,
        amount_cents,
        kind: wallet::EntryKind::ClaimCredit,
        reference: packet_id,
        fingerprint,
        keep_ms: 0,
        balance_limit_cents: 0,
        history_entry: Some(history_entry),
    }
}

/// Claim steps 2 to 4 for a pending claim of `share` of `packet_id` (sent by `sender_id`),
/// claimed by `user_id` at `claimed_at_ms`: credit the grabber once (record pinned) together
/// with their received history entry, mark the claim done, un-pin the record. Used by
/// [`claim`] and by reclaim-cron.
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached; the claim stays pending and a later
/// call finishes it.
pub async fn redrive_claim(
    store: &Store,
    packet_id: &str,
    sender_id: &str,
    user_id: &str,
    share: &Share,
    claimed_at_ms: i64,
) -> Result<Credit, Error> {
    let cfg = store.config();
    let amount_cents = share.amount_cents;
    let transfer_id = wallet::claim_transfer_id(packet_id);
    let fingerprint = amount_cents.to_string();
    let entry = ReceivedEntry {
        packet_id: packet_id.to_string(),
        sender_id: sender_id.to_string(),
        amount_cents,
        share_id: share.share_id,
        claimed_at_ms,
    }
    .member(year_of(&cfg.history.tz, claimed_at_ms));
    let mut credited = wallet::credit(
        store,
        user_id,
        &claim_credit(packet_id, &transfer_id, amount_cents, &fingerprint, &entry),
    )
    .await?;
    if credited.conflict {
        return Err(Error::Internal(format!(
            "transfer {transfer_id} for {user_id} conflicts"
        )));
    }
    let claims = Keys::new(&cfg.key_prefix).packet(packet_id).claims;
    let mut conn = store.conn().await?;
    let _: i64 = ClaimDoneCall {
        claims: &claims,
        user_id,
    }
    .invocation()
    .invoke_async(&mut conn)
    .await?;
    credited.balance_cents = wallet::release_claim_record(store, user_id, packet_id).await?;
    Ok(credited)
}

/// The function's clock, Unix ms (only to pick the business years a script may fall in; the
/// scripts date everything by Redis `TIME`).
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}
