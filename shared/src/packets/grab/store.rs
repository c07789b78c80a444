//! `POST /packets/{id}/grab`'s store step: one EVALSHA of `grab.lua`, its reply parsed
//! into a [`GrabOutcome`] and what the sandbox may remember of the packet (`Seen`); or, for
//! a packet this sandbox saw sold out or expired, one `HGET` of its grabs hash (`gone.rs`).

use crate::store::scripts::{DrawEnterCall, GrabCall};
use std::time::Instant;

use redis::Value;

use crate::draws::rules as draws;
use crate::packets::draw;
use crate::packets::rules::gone::{SoldOutSeen, Verdict};
use crate::packets::rules::password::Password;
use crate::packets::rules::{GrabOutcome, Share};
use crate::store::keys::{is_packet_id, Keys};
use crate::store::scripts::{text, Call};
use crate::store::{Error, Store};

impl DrawEnterCall<'_> {
    /// `draw_enter.lua`'s reply: `Ok(None)` for `draw_due` (run the draw, grab again), else
    /// the grab's outcome.
    ///
    /// # Errors
    /// [`Error::Internal`] for a reply of another shape.
    fn outcome(reply: Value) -> Result<Option<GrabOutcome>, Error> {
        let reply = text("draw_enter", reply)?;
        let bad = || Error::bad_reply("draw_enter", &reply);
        let (outcome, data) = reply.split_once(':').unwrap_or((reply.as_str(), ""));
        Ok(Some(match outcome {
            "entered" => GrabOutcome::Entered {
                draw_at_ms: data.parse().map_err(|_| bad())?,
            },
            "rate_limited" => GrabOutcome::RateLimited {
                retry_after_ms: data.parse().map_err(|_| bad())?,
            },
            "cancelled" => GrabOutcome::Cancelled,
            "not_found" => GrabOutcome::NotFound,
            "draw_due" => return Ok(None),
            _ => return Err(bad()),
        }))
    }
}

/// What to do with a grab's reply.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    /// The answer, and what the sandbox may remember of the packet.
    Answer(GrabOutcome, Seen),
    /// A draw packet in its entry window: the packet's seed, to compute the caller's ticket
    /// (`draws::rules::ticket`) and enter them (`draw_enter.lua`).
    Seed(String),
    /// A draw packet whose draw is due and not complete: run it (`draw.rs`), then ask again.
    DrawDue,
}

/// What a grab's reply lets this sandbox remember of the packet (`gone.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seen {
    /// Nothing.
    Nothing,
    /// Sold out, with the packet's `expires_at` and Redis `TIME` as the script read them.
    SoldOut(SoldOutSeen),
    /// Expired for good (untargeted).
    Expired,
}

impl GrabCall<'_> {
    /// `grab.lua`'s reply: `<outcome>[:<data>]`, e.g. `grabbed:<share record>:<claim_by ms>`,
    /// `sold_out:<expires_at ms>:<now ms>` (the two numbers only for a packet this sandbox may
    /// remember), `not_open_yet:<opens_at ms>:<now ms>`.
    ///
    /// # Errors
    /// [`Error::Internal`] for a reply of another shape.
    fn outcome(reply: Value) -> Result<Step, Error> {
        let reply = text("grab", reply)?;
        let (outcome, data) = reply.split_once(':').unwrap_or((reply.as_str(), ""));
        let bad = || Error::bad_reply("grab", &reply);
        let mut seen = Seen::Nothing;
        let outcome = match outcome {
            "grabbed" => {
                let (record, claim_by) = data.rsplit_once(':').ok_or_else(bad)?;
                GrabOutcome::Grabbed {
                    share: Share::parse(record)?,
                    claim_by_ms: claim_by.parse().map_err(|_| bad())?,
                }
            }
            "already_grabbed" => GrabOutcome::AlreadyGrabbed(Share::parse(data)?),
            "not_found" => GrabOutcome::NotFound,
            "rate_limited" => GrabOutcome::RateLimited {
                retry_after_ms: data.parse().map_err(|_| bad())?,
            },
            "expired" => {
                if !data.is_empty() {
                    seen = Seen::Expired;
                }
                GrabOutcome::Expired
            }
            "sold_out" => {
                if let Some((expires_at, now)) = data.split_once(':') {
                    seen = Seen::SoldOut(SoldOutSeen {
                        expires_at_ms: expires_at.parse().map_err(|_| bad())?,
                        redis_now_ms: now.parse().map_err(|_| bad())?,
                    });
                }
                GrabOutcome::SoldOut
            }
            "not_a_recipient" => GrabOutcome::NotARecipient,
            "cancelled" => GrabOutcome::Cancelled,
            "wrong_password" => GrabOutcome::WrongPassword,
            "guesses_exhausted" => GrabOutcome::GuessesExhausted,
            "not_open_yet" => {
                let (opens_at, now) = data.split_once(':').ok_or_else(bad)?;
                let opens_at_ms: i64 = opens_at.parse().map_err(|_| bad())?;
                let now_ms: i64 = now.parse().map_err(|_| bad())?;
                GrabOutcome::NotOpenYet {
                    opens_at_ms,
                    retry_after_ms: (opens_at_ms - now_ms).max(1),
                }
            }
            "entered" => GrabOutcome::Entered {
                draw_at_ms: data.parse().map_err(|_| bad())?,
            },
            "not_drawn" => GrabOutcome::NotDrawn,
            "draw_due" => return Ok(Step::DrawDue),
            "draw_seed" => {
                let (seed, _draw_at) = data.split_once(':').ok_or_else(bad)?;
                return Ok(Step::Seed(seed.to_string()));
            }
            _ => return Err(bad()),
        };
        Ok(Step::Answer(outcome, seen))
    }
}

/// Grabs at most one share of `packet_id` for `user_id`, in one round trip: one EVALSHA of
/// `grab.lua`, subject to the per-user, per-packet rate limit of the configuration (and a
/// password packet's wrong guesses to its guess budget); or, for a
/// packet this sandbox saw sold out or expired, one `HGET` of its grabs hash (`store/packets/gone.rs`).
///
/// A remembered packet answers [`GrabOutcome::AlreadyGrabbed`] with the caller's share if the
/// grabs hash holds one (not counted by the rate limit: the `HGET` costs Redis less than the
/// limiter would), else [`GrabOutcome::SoldOut`], or [`GrabOutcome::Expired`] once Redis `TIME`
/// has surely reached `expires_at` (when that is sure: [`crate::packets::rules::gone`]). Once
/// the packet's keys have expired after settlement, a sandbox that remembers it answers
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
    let rate = keys.grab_rate(packet_id, user_id);
    let guesses = keys.guesses(packet_id, user_id);
    let verifier = password.map(|p| p.verifier(packet_id)).unwrap_or_default();
    let call_id = format!("{:08x}", rand::random::<u32>());
    // A draw packet takes more calls: in the entry window the grab (answered the seed), then
    // the entry; from draw_at a grab finding the draw due, the draw, then the grab again.
    let mut step = 0;
    let (outcome, seen, sent, answered) = loop {
        step += 1;
        let sent = Instant::now();
        let reply: Value = GrabCall {
            meta: &pk.meta,
            shares: &pk.shares,
            grabs: &pk.grabs,
            rate: &rate,
            recipients: &pk.recipients,
            wrong_guesses: &pk.wrong_guesses,
            guesses: &guesses,
            order: &pk.order,
            user_id,
            rate_limit: cfg.packets.grab_rate_limit,
            rate_window_ms: cfg.packets.grab_rate_window_ms,
            password: &verifier,
            call_id: &call_id,
            guess_budget: cfg.packets.guess_budget,
            guess_window_ms: cfg.packets.guess_window_ms,
            guesses_per_user: cfg.packets.guesses_per_user,
        }
        .invocation()
        .invoke_async(&mut conn)
        .await?;
        let answered = Instant::now();
        match GrabCall::outcome(reply)? {
            Step::Answer(outcome, seen) => break (outcome, seen, sent, answered),
            _ if step >= 4 => {
                return Err(Error::Internal(format!(
                    "grab of packet {packet_id}: no answer after its draw"
                )))
            }
            Step::Seed(seed) => {
                let ticket = draws::ticket(&seed, user_id).ok_or_else(|| {
                    Error::Internal(format!("packet {packet_id}: a malformed draw seed"))
                })?;
                let reply: Value = DrawEnterCall {
                    meta: &pk.meta,
                    tickets: &pk.tickets,
                    rate: &rate,
                    user_id,
                    ticket: &ticket,
                    rate_limit: cfg.packets.grab_rate_limit,
                    rate_window_ms: cfg.packets.grab_rate_window_ms,
                }
                .invocation()
                .invoke_async(&mut conn)
                .await?;
                match DrawEnterCall::outcome(reply)? {
                    Some(outcome) => break (outcome, Seen::Nothing, sent, Instant::now()),
                    None => {
                        draw::run(store, packet_id).await?;
                    }
                }
            }
            Step::DrawDue => {
                draw::run(store, packet_id).await?;
            }
        }
    };
    match seen {
        Seen::Nothing => {}
        Seen::Expired => gone.expired(packet_id),
        Seen::SoldOut(reading) => gone.sold_out(packet_id, reading, sent, answered),
    }
    Ok(match outcome {
        // The packet existed when this sandbox saw it gone: its keys have expired since.
        GrabOutcome::NotFound if gone.knows(packet_id) => GrabOutcome::Expired,
        outcome => outcome,
    })
}
