//! `POST /packets`'s store step: the reclaim index entry (`lua/due_add.lua`), then the debit
//! and the packet in one script (`create_packet.lua`), and that script's reply parsed into
//! `CreateReply`.

use crate::store::scripts::{CreatePacketCall, DueAddCall};
use redis::Value;

use crate::domain::split;
use crate::draws::rules as draws;
use crate::history::rules::YearBounds;
use crate::packets::rules::{
    receipt, CreateOutcome, NewPacket, CREATE_WINDOW_MS, PACKETS_DAY_WINDOW_MS, PACKETS_WINDOW_MS,
};
use crate::packets::view::store::load;
use crate::store::keys::{new_packet_id, Keys};
use crate::store::scripts::{int, texts, Call};
use crate::store::{Conn, Error, Store};

impl DueAddCall<'_> {
    /// Runs the call: `(true, Redis TIME)` if this call indexed the id, `(false, _)` if the id
    /// was already indexed (drawn twice, or this call re-sent after a lost reply).
    ///
    /// # Errors
    /// [`Error::Unavailable`] when Redis cannot be reached.
    pub(crate) async fn run(&self, conn: &mut Conn) -> Result<(bool, i64), Error> {
        let (indexed, indexed_at_ms): (i64, i64) = self.invocation().invoke_async(conn).await?;
        Ok((indexed == 1, indexed_at_ms))
    }
}

/// `create_packet.lua`'s reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CreateReply {
    /// `created`: the packet exists now, debited.
    Created,
    /// `repeat <packet_id>`: the `Idempotency-Key` made `packet_id` before.
    Repeat {
        /// The earlier packet.
        packet_id: String,
    },
    /// `insufficient_funds <balance>`.
    InsufficientFunds {
        /// The sender's balance, cents.
        balance_cents: i64,
    },
    /// `idempotency_key_reused`.
    IdempotencyKeyReused,
    /// `rate_limited <ms> <minute|day>`.
    RateLimited {
        /// Until the sender's quota window ends, ms.
        retry_after_ms: i64,
        /// The day's quota is used up (not the minute's).
        per_day: bool,
    },
    /// `too_many_open <ms>`.
    TooManyOpen {
        /// Until the first of the sender's open packets expires, ms.
        retry_after_ms: i64,
    },
    /// `id_taken`: the drawn id belongs to another packet; draw another.
    IdTaken,
    /// `late`: delivered after its window; nothing was created.
    Late,
}

impl CreatePacketCall<'_> {
    /// `create_packet.lua`'s reply as a [`CreateReply`].
    ///
    /// # Errors
    /// [`Error::Internal`] for a reply of another shape.
    pub(crate) fn reply(reply: Value) -> Result<CreateReply, Error> {
        let reply = texts("create_packet", reply)?;
        Ok(match reply.first().map(String::as_str) {
            Some("created") => CreateReply::Created,
            Some("repeat") => CreateReply::Repeat {
                packet_id: reply.get(1).cloned().unwrap_or_default(),
            },
            Some("insufficient_funds") => CreateReply::InsufficientFunds {
                balance_cents: int("create_packet", reply.get(1))?,
            },
            Some("idempotency_key_reused") => CreateReply::IdempotencyKeyReused,
            Some("rate_limited") => CreateReply::RateLimited {
                retry_after_ms: int("create_packet", reply.get(1))?,
                per_day: reply.get(2).map(String::as_str) == Some("day"),
            },
            Some("too_many_open") => CreateReply::TooManyOpen {
                retry_after_ms: int("create_packet", reply.get(1))?,
            },
            Some("id_taken") => CreateReply::IdTaken,
            Some("late") => CreateReply::Late,
            _ => return Err(Error::bad_reply("create_packet", format!("{reply:?}"))),
        })
    }
}

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
/// A repeated `Idempotency-Key` answers the earlier packet only for the same request: the same
/// fingerprint (`domain::packets::fingerprint`, which records only *that* a password was given)
/// and the same password, compared by its verifier under the earlier packet's salt; anything
/// else is [`CreateOutcome::IdempotencyKeyReused`].
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
    // A draw packet's seed, drawn here with a CSPRNG and committed (draws::rules).
    let draw = req.draw.map(|d| {
        let seed = draws::new_seed(&mut rand::rng());
        let committed = draws::commitment(&seed);
        ((d.entry_secs * 1000).to_string(), seed, committed)
    });
    let (draw_entry_ms, draw_seed, draw_commitment) = draw.unwrap_or_default();
    let mut conn = store.conn().await?;
    let wk = keys.wallet(sender_id);
    let record_id = idempotency_key.map(|k| format!("create:{k}"));
    // The script dates the sent history entry by its own Redis TIME; these bounds cover a
    // year either side of this function's clock.
    let year_bounds = YearBounds::around(&cfg.history.tz, now_ms()).arg();
    let fingerprint = req.fingerprint();
    let recipient_ids = req.recipients.join("\n");
    let due = keys.reclaim_due();
    for _ in 0..3 {
        let packet_id = new_packet_id(sender_id);
        let (indexed, indexed_at_ms) = DueAddCall {
            due: &due,
            packet_id: &packet_id,
            expires_in_secs: req.first_due_secs(),
        }
        .run(&mut conn)
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
            creates: &wk.creates,
            recipients: &pk.recipients,
            sent: &wk.sent,
            received: &wk.received,
            history_totals: &wk.history_totals,
            journal: &wk.journal,
            open_packets: &wk.open_packets,
            creates_day: &wk.creates_day,
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
            ledger_cap: crate::wallet::rules::LEDGER_CAP,
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
            draw_entry_ms: &draw_entry_ms,
            draw_seed: &draw_seed,
            draw_commitment: &draw_commitment,
            max_open_packets: cfg.packets.max_open_packets,
            packets_per_day: cfg.packets.packets_per_day,
            day_window_ms: PACKETS_DAY_WINDOW_MS,
            share_amounts: &amounts,
        };
        let reply =
            CreatePacketCall::reply(call.invocation().invoke_async::<Value>(&mut conn).await?);
        // A refusal brings the index entry forward (see `reclaim_soon`).
        if indexed && !matches!(reply, Ok(CreateReply::Created | CreateReply::IdTaken)) {
            reclaim_soon(&mut conn, &due, &packet_id, indexed_at_ms).await;
        }
        return Ok(match reply? {
            CreateReply::Created => CreateOutcome::Created(load(store, &packet_id).await?),
            CreateReply::Repeat { packet_id: id } => {
                let earlier = load(store, &id).await?;
                // The fingerprint says only whether there is a password (the password is
                // stored nowhere but as the packet's verifier): a repeat must also carry the
                // same password, compared by its verifier under the earlier packet's salt.
                let same_password = match (&req.password, &earlier.password_verifier) {
                    (None, None) => true,
                    (Some(p), Some(v)) => &p.verifier(&id) == v,
                    _ => false,
                };
                if same_password {
                    CreateOutcome::Repeat(earlier)
                } else {
                    CreateOutcome::IdempotencyKeyReused
                }
            }
            CreateReply::InsufficientFunds { balance_cents } => {
                CreateOutcome::InsufficientFunds { balance_cents }
            }
            CreateReply::IdempotencyKeyReused => CreateOutcome::IdempotencyKeyReused,
            CreateReply::RateLimited {
                retry_after_ms,
                per_day,
            } => CreateOutcome::RateLimited {
                retry_after_ms,
                per_day,
            },
            CreateReply::TooManyOpen { retry_after_ms } => {
                CreateOutcome::TooManyOpen { retry_after_ms }
            }
            CreateReply::IdTaken => continue,
            // Delivered after its window (held up in the network): nothing was created; the
            // caller's create did not happen and may be retried.
            CreateReply::Late => {
                return Err(Error::Unavailable(
                    "create_packet was delivered after its window; nothing was created".into(),
                ))
            }
        });
    }
    Err(Error::Internal("could not draw an unused packet id".into()))
}

/// Moves a refused create's reclaim index entry to `indexed_at_ms`, so reclaim-cron looks at
/// the id soon (it drops the entry once it has been a phantom for `PHANTOM_GRACE_MS`, and
/// moves it to the packet's expiry if a late first run of the same call created the packet).
/// A refusal is never a reason to remove the entry: the answer may come from a re-sent run
/// while the first run, delivered late, still creates the packet within its window. Only for
/// an entry this call added, never for an id that belongs to another packet (that entry
/// guards a refund). A failure is logged: the entry then waits for its own due time.
pub(crate) async fn reclaim_soon(conn: &mut Conn, due: &str, packet_id: &str, indexed_at_ms: i64) {
    let moved: Result<i64, _> = redis::cmd("ZADD")
        .arg(due)
        .arg("XX")
        .arg("LT")
        .arg(indexed_at_ms)
        .arg(packet_id)
        .query_async(conn)
        .await;
    if let Err(e) = moved {
        tracing::warn!(%e, packet_id, "could not bring a refused create's reclaim index entry forward");
    }
}

/// The function's clock, Unix ms (only to pick the business years a script may fall in; the
/// scripts date everything by Redis `TIME`).
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}
