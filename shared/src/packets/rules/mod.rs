//! Red packets as pure records: shares, packets and their status, a packet's view, and the
//! outcome of each operation. A create request and its limits are `rules`'s job
//! ([`PacketRules::check`]), the request's idempotency fingerprint `fingerprint`'s; the
//! reclaim settings live in [`crate::domain::reclaim`] (re-exported here). The atomic steps are
//! `create_packet.lua`, `grab.lua`, `claim.lua` (and `claim_done.lua`,
//! `lua/wallet_credit.lua`, `lua/transfer_release.lua`) called by [`crate::packets`].

use std::collections::HashMap;

use crate::domain::split::{LuckySplit, Mode};
use crate::domain::BadRecord;
use crate::draws::rules::{Draw, DrawResult};
use crate::merchants::rules::{IssuedTerms, MerchantOrigin, Payout, ShareCoupon};

mod fingerprint;
pub mod gone;
mod limits;
pub mod password;
pub mod receipt;

pub use crate::domain::reclaim::{
    ReclaimRules, CREATE_WINDOW_MS, PHANTOM_GRACE_MS, RECLAIM_BATCH, RECLAIM_LOCK_TTL_MS,
    RECLAIM_SETTINGS,
};
pub use fingerprint::FINGERPRINT_V2;
pub use limits::{
    is_cover_id, NewPacket, PacketRequest, PacketRules, COVERS, DEFAULT_EXPIRES_IN_SECS,
    GRAB_RATE_LIMIT, GRAB_RATE_WINDOW_MS, GUESSES_PER_USER, GUESS_BUDGET, GUESS_WINDOW_MS,
    IDEMPOTENCY_TTL_SECS, LAMBDA_MAX_TIMEOUT_SECS, MAX_COUNT, MAX_COVER_CHARS, MAX_EXPIRES_IN_SECS,
    MAX_GREETING_CHARS, MAX_OPENS_IN_SECS, MAX_OPEN_PACKETS, MAX_RECIPIENTS, MAX_RECIPIENTS_BYTES,
    MAX_TOTAL_CENTS, MIN_IDEMPOTENCY_TTL_SECS, NODE_CLOCK_MARGIN_SECS, PACKETS_DAY_WINDOW_MS,
    PACKETS_PER_DAY, PACKETS_PER_MINUTE, PACKETS_WINDOW_MS, RESEND_HORIZON_SECS, RETENTION_SECS,
    SETTINGS,
};

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
    /// Parses a share record `share_id:amount_cents:grabbed_at_ms[:call_id]` (the call id of
    /// the grab that won it, 8 hex digits, in records written since grabs carry one; `drawn`
    /// for a draw's winner, whose `grabbed_at_ms` is the draw's `draw_at`).
    ///
    /// # Errors
    /// [`BadRecord`] for any other shape.
    pub fn parse(record: &str) -> Result<Self, BadRecord> {
        let mut it = record.splitn(4, ':');
        let mut next = || it.next().and_then(|s| s.parse::<i64>().ok());
        let fields = (next(), next(), next());
        let call_ok = it.next().is_none_or(|c| {
            c == "drawn" || c.len() == 8 && c.bytes().all(|b| b.is_ascii_hexdigit())
        });
        match fields {
            _ if !call_ok => Err(BadRecord(format!("bad share record {record:?}"))),
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
    /// Who sent it: the user who paid, or for a merchant packet the customer who shares it
    /// (its merchant paid: [`Packet::merchant`]).
    pub sender_id: String,
    /// A merchant packet's merchant, sharer, payout and order; `None` for a user's packet.
    pub merchant: Option<MerchantOrigin>,
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
    /// When its sender cancelled it (its un-grabbed shares refunded then), Unix ms (Redis
    /// `TIME`); `None` if never.
    pub cancelled_at_ms: Option<i64>,
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
    /// When grabs open, Unix ms (Redis `TIME`): `created_at_ms` unless scheduled.
    pub opens_at_ms: i64,
    /// The cover id, if any.
    pub cover: Option<String>,
    /// The fairness receipt's commitment ([`receipt`]), 64 hex digits; `None` for packets
    /// created before receipts.
    pub commitment: Option<String>,
    /// The receipt's salt, 64 hex digits: secret while the packet is open (never in an
    /// answer before [`Status::reveals`]).
    pub salt: Option<String>,
    /// A password packet's verifier ([`password::Password::verifier`]), 64 hex digits; never
    /// in an answer, a log line or the journal. `None`: anyone (allowed) may grab.
    pub password_verifier: Option<String>,
    /// A draw packet's draw; `None`: first come, first served.
    pub draw: Option<Draw>,
}

impl Packet {
    /// A packet from its stored hash fields (`packet_id`, `sender_id`, `total_cents`, `count`,
    /// `mode`, `split`, `greeting`, `created_at`, `expires_at`, `status`, the counters). A
    /// merchant packet has no `sender_id` but `merchant_id`, `sharer_id`, `payout` and
    /// `order_reference` (`merchant_create_packet.lua`), and a coupon packet `redeem_by`
    /// and `min_order`.
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
        let merchant = match fields.get("merchant_id") {
            None => None,
            Some(merchant_id) => Some(MerchantOrigin {
                merchant_id: merchant_id.clone(),
                sharer_id: s("sharer_id")?,
                payout: Payout::parse(&s("payout")?)
                    .ok_or_else(|| BadRecord("bad merchant packet payout".into()))?,
                coupon: match fields.get("redeem_by") {
                    None => None,
                    Some(_) => Some(IssuedTerms {
                        min_order_cents: match fields.get("min_order") {
                            None => None,
                            Some(_) => Some(n("min_order")?),
                        },
                        redeem_by_ms: n("redeem_by")?,
                    }),
                },
                order_reference: s("order_reference")?,
            }),
        };
        Ok(Packet {
            packet_id: s("packet_id")?,
            sender_id: match &merchant {
                Some(m) => m.sharer_id.clone(),
                None => s("sender_id")?,
            },
            merchant,
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
            cancelled_at_ms: match fields.get("cancelled_at") {
                None => None,
                Some(_) => Some(n("cancelled_at")?),
            },
            grabbed_count: n("grabbed_count")? as u32,
            grabbed_cents: n("grabbed_cents")?,
            claimed_cents: n("claimed_cents")?,
            refunded_cents: n("refunded_cents")?,
            recipient_count: match fields.get("recipients") {
                None => 0,
                Some(_) => n("recipients")? as u32,
            },
            opens_at_ms: match fields.get("opens_at") {
                None => n("created_at")?,
                Some(_) => n("opens_at")?,
            },
            cover: fields.get("cover").cloned(),
            commitment: digest(fields, "commitment")?,
            salt: digest(fields, "salt")?,
            password_verifier: digest(fields, "password")?,
            draw: match fields.get("draw_at") {
                None => None,
                Some(_) => Some(Draw {
                    draw_at_ms: n("draw_at")?,
                    commitment: digest(fields, "draw_commitment")?
                        .ok_or_else(|| BadRecord("a draw without its commitment".into()))?,
                    seed: digest(fields, "draw_seed")?
                        .ok_or_else(|| BadRecord("a draw without its seed".into()))?,
                    result: match fields.get("drawn_at") {
                        None => None,
                        Some(_) => Some(DrawResult {
                            entrants: n("draw_entrants")? as u64,
                            winners: n("draw_winners")? as u64,
                            threshold: digest(fields, "draw_threshold")?,
                            drawn_at_ms: n("drawn_at")?,
                        }),
                    },
                }),
            },
        })
    }
}

/// The stored receipt field `name` (64 lowercase hex digits), or `None` when absent.
fn digest(fields: &HashMap<String, String>, name: &str) -> Result<Option<String>, BadRecord> {
    match fields.get(name) {
        None => Ok(None),
        Some(v) if receipt::is_digest_hex(v) => Ok(Some(v.clone())),
        Some(_) => Err(BadRecord(format!(
            "packet field {name} is not 64 hex digits"
        ))),
    }
}

/// What a packet looks like to `GET /packets/{id}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, utoipa::ToSchema)]
#[schema(rename_all = "snake_case")]
#[schema(description = "A red packet's state.", as = PacketStatus)]
pub enum Status {
    /// Scheduled: grabs open at `opens_at`.
    Scheduled,
    /// Shares left and not expired.
    Open,
    /// Every share grabbed, not expired yet.
    SoldOut,
    /// Past `expires_at`, not yet refunded.
    Expired,
    /// Refunded by reclaim-cron.
    Settled,
    /// Cancelled by its sender: no more grabs, the un-grabbed shares refunded; grabbed shares
    /// stay claimable until `expires_at`.
    Cancelled,
    /// A draw packet from its opening until its draw is complete: grabs enter the draw (until
    /// `draw_at`).
    Entering,
    /// A draw packet whose draw is complete: its winners hold their shares (claimable until
    /// `expires_at`).
    Drawn,
}

impl Status {
    /// The status of `packet` at Redis time `now_ms` (Unix ms): settled, else expired once
    /// `expires_at` has passed, else for a draw packet entering until its draw is complete and
    /// drawn after, else sold out once every share is grabbed, else open.
    pub fn at(packet: &Packet, now_ms: i64) -> Self {
        if packet.settled {
            Status::Settled
        } else if packet.cancelled_at_ms.is_some() {
            Status::Cancelled
        } else if now_ms < packet.opens_at_ms {
            Status::Scheduled
        } else if now_ms >= packet.expires_at_ms {
            Status::Expired
        } else if let Some(draw) = &packet.draw {
            match draw.result {
                Some(_) => Status::Drawn,
                None => Status::Entering,
            }
        } else if packet.grabbed_count >= packet.count {
            Status::SoldOut
        } else {
            Status::Open
        }
    }

    /// Whether the fairness receipt is revealed in this status: once no grab can change
    /// which share goes to whom (sold out, cancelled, expired, settled), never while
    /// scheduled or open.
    pub fn reveals(self) -> bool {
        matches!(
            self,
            Status::SoldOut | Status::Expired | Status::Settled | Status::Cancelled | Status::Drawn
        )
    }

    /// The JSON name: `scheduled`, `open`, `sold_out`, `expired`, `settled`, `cancelled`,
    /// `entering`, `drawn`.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Scheduled => "scheduled",
            Status::Open => "open",
            Status::SoldOut => "sold_out",
            Status::Expired => "expired",
            Status::Settled => "settled",
            Status::Cancelled => "cancelled",
            Status::Entering => "entering",
            Status::Drawn => "drawn",
        }
    }
}

/// One grab as listed by [`crate::packets::view()`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grab {
    /// The grabber.
    pub user_id: String,
    /// Their share.
    pub share: Share,
    /// Whether they claimed it (credited or being credited).
    pub claimed: bool,
}

/// Positions (share ids) in one page of a packet's grabs and of its reveal: what
/// `GET /packets/{id}` shows first and `GET /packets/{id}/grabs` shows per call, so that a
/// view's Redis time is bounded by the page, not by the packet's size (up to
/// `HONGBAO_MAX_COUNT` shares).
pub const GRABS_PAGE: u32 = 100;

/// The positions of the page of a packet's grabs (and reveal) that starts at share id `from`,
/// `size` of them, and the `from` of the next page: `None` after the last position there is
/// (`count` once the packet reveals its shares, `grabbed_count` before), or when `size` is 0.
pub fn next_page(packet: &Packet, reveals: bool, from: u32, size: u32) -> Option<u32> {
    let end = if reveals {
        packet.count
    } else {
        packet.grabbed_count
    };
    let next = from.saturating_add(size);
    (size > 0 && next <= end).then_some(next)
}

/// A consistent snapshot of a packet and one page of its grabs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PacketView {
    /// Fields and counters.
    pub packet: Packet,
    /// Status at the snapshot's Redis `TIME`.
    pub status: Status,
    /// A page of grabs in grab order: those of the page's positions (share ids) that were
    /// grabbed, at most [`GRABS_PAGE`].
    pub grabs: Vec<Grab>,
    /// The viewer's own grab, on whatever page it is; `None` when they grabbed none.
    pub mine: Option<Grab>,
    /// The share id the next page starts at ([`next_page`]); `None` after the last.
    pub next_cursor: Option<u32>,
    /// The largest share once every share is grabbed (ties: the earlier grab), else `None`.
    pub best_luck: Option<(String, i64)>,
    /// The fairness receipt's reveal once [`Status::reveals`] (and the packet has a receipt):
    /// the page's shares.
    pub reveal: Option<Reveal>,
}

/// The reveal of a packet's fairness receipt ([`receipt`]): the salt and the shares of one
/// page's positions (every share once the pages are joined).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reveal {
    /// The salt, 64 hex digits.
    pub salt: String,
    /// The page's shares' amounts, cents, in share-id order (the page's first position
    /// first).
    pub shares_cents: Vec<i64>,
}

/// The outcome of [`crate::packets::create()`].
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
    /// The sender created `HONGBAO_PACKETS_PER_MINUTE` packets in the open minute window, or
    /// `HONGBAO_PACKETS_PER_DAY` in the open day window; nothing changed.
    RateLimited {
        /// Milliseconds until the window closes (≥ 1).
        retry_after_ms: i64,
        /// The day's quota (not the minute's) is used up.
        per_day: bool,
    },
    /// The sender has `HONGBAO_MAX_OPEN_PACKETS_PER_USER` packets open (neither expired nor
    /// cancelled); nothing changed.
    TooManyOpen {
        /// Milliseconds until the first of them expires (≥ 1).
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

/// The outcome of [`crate::packets::grab()`].
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
    /// The sender cancelled the packet; nothing written.
    Cancelled,
    /// A password packet, and the grab's password is missing or wrong; nothing written but
    /// the attempt, counted by the grab rate limit.
    WrongPassword,
    /// A password packet, and the caller's wrong guesses on it reached
    /// `HONGBAO_GUESSES_PER_USER`: their password attempts on it are refused for good, the
    /// password not compared; nothing written.
    GuessesExhausted,
    /// A scheduled packet before its opening (Redis `TIME`); nothing written.
    NotOpenYet {
        /// When grabs open, Unix ms.
        opens_at_ms: i64,
        /// Milliseconds until then (≥ 1).
        retry_after_ms: i64,
    },
    /// A draw packet during its entry window: the caller is one of its entrants (now, or by
    /// an earlier grab: the same answer); the draw happens at `draw_at_ms`
    /// ([`crate::draws::rules`]).
    Entered {
        /// When the draw happens, Unix ms (Redis `TIME`).
        draw_at_ms: i64,
    },
    /// A draw packet whose draw is complete, and the caller did not win; nothing written.
    NotDrawn,
}

/// The outcome of [`crate::packets::cancel()`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelOutcome {
    /// Cancelled, now or by an earlier call (the same figures either way).
    Cancelled {
        /// The un-grabbed shares refunded to the sender at the cancel, cents.
        refunded_cents: i64,
        /// When it was cancelled, Unix ms (Redis `TIME`).
        cancelled_at_ms: i64,
        /// Cancelled before this call's run (by an earlier call, or an earlier run of this
        /// one): the answer is a replay.
        earlier: bool,
    },
    /// No such packet.
    NotFound,
    /// The caller is not the packet's sender; nothing written.
    Forbidden,
    /// Sold out, expired or settled: nothing left to cancel; nothing written.
    NotCancellable(Status),
}

/// The outcome of [`crate::packets::claim()`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimOutcome {
    /// The share is in the caller's wallet, or for a merchant packet paid out as coupons,
    /// the caller's coupon.
    Claimed {
        /// The share.
        share: Share,
        /// The caller's balance after the credit (or now, for a repeat or a coupon), cents.
        balance_cents: i64,
        /// The coupon the share became (a coupon payout); `None`: credited to the wallet.
        coupon: Option<ShareCoupon>,
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

/// A grab's claim, as the packet's claims hash records it (`claim.lua` writes
/// `pending:<claimed_at_ms>`, `claim_done.lua` turns it into `done:<claimed_at_ms>`, or
/// `done:<claimed_at_ms>:redriven` when reclaim-cron completed it after the claim window
/// closed; a coupon packet's claim `done:<claimed_at_ms>:<call id>`, the call that issued the
/// coupon; no entry: never claimed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimState {
    /// The grabber has not claimed the share.
    Unclaimed,
    /// Step 1 is done (the share is reserved for the grabber's wallet); the credit and the
    /// `done` mark are not both recorded yet. The next claim call or reclaim-cron finishes it.
    Pending {
        /// When the claim was accepted, Unix ms (Redis `TIME`).
        claimed_at_ms: i64,
    },
    /// Credited and marked done by a claim call.
    Done {
        /// When the claim was accepted, Unix ms (Redis `TIME`).
        claimed_at_ms: i64,
    },
    /// Left pending when the claim window closed, then credited and marked done by
    /// reclaim-cron's re-drive.
    Redriven {
        /// When the claim was accepted, Unix ms (Redis `TIME`).
        claimed_at_ms: i64,
    },
}

impl ClaimState {
    /// The suffix `claim_done.lua` adds to a claim reclaim-cron completed.
    pub const REDRIVEN_MARK: &'static str = "redriven";

    /// Parses a claims-hash value (`None`: no entry, [`ClaimState::Unclaimed`]).
    ///
    /// # Errors
    /// [`BadRecord`] for any other shape.
    pub fn parse(state: Option<&str>) -> Result<Self, BadRecord> {
        let Some(state) = state else {
            return Ok(ClaimState::Unclaimed);
        };
        let bad = || BadRecord(format!("bad claim state {state:?}"));
        let mut parts = state.split(':');
        let (kind, at, mark) = (parts.next(), parts.next(), parts.next());
        if parts.next().is_some() {
            return Err(bad());
        }
        let claimed_at_ms: i64 = at.and_then(|a| a.parse().ok()).ok_or_else(bad)?;
        match (kind, mark) {
            (Some("pending"), None) => Ok(ClaimState::Pending { claimed_at_ms }),
            (Some("done"), None) => Ok(ClaimState::Done { claimed_at_ms }),
            (Some("done"), Some(Self::REDRIVEN_MARK)) => Ok(ClaimState::Redriven { claimed_at_ms }),
            // A coupon packet's claim keeps the id of the call that issued the coupon.
            (Some("done"), Some(call))
                if !call.is_empty() && call.bytes().all(|b| b.is_ascii_hexdigit()) =>
            {
                Ok(ClaimState::Done { claimed_at_ms })
            }
            _ => Err(bad()),
        }
    }

    /// `unclaimed`, `pending`, `done` or `redriven`.
    pub fn as_str(self) -> &'static str {
        match self {
            ClaimState::Unclaimed => "unclaimed",
            ClaimState::Pending { .. } => "pending",
            ClaimState::Done { .. } => "done",
            ClaimState::Redriven { .. } => "redriven",
        }
    }

    /// When the claim was accepted, Unix ms; `None` when unclaimed.
    pub fn claimed_at_ms(self) -> Option<i64> {
        match self {
            ClaimState::Unclaimed => None,
            ClaimState::Pending { claimed_at_ms }
            | ClaimState::Done { claimed_at_ms }
            | ClaimState::Redriven { claimed_at_ms } => Some(claimed_at_ms),
        }
    }
}

/// Parses a claim state (`pending:<ms>`, `done:<ms>`, `done:<ms>:redriven`) into (pending,
/// claimed_at_ms).
pub(crate) fn parse_claim_state(state: &str) -> Result<(bool, i64), BadRecord> {
    match ClaimState::parse(Some(state))? {
        ClaimState::Pending { claimed_at_ms } => Ok((true, claimed_at_ms)),
        ClaimState::Done { claimed_at_ms } | ClaimState::Redriven { claimed_at_ms } => {
            Ok((false, claimed_at_ms))
        }
        ClaimState::Unclaimed => unreachable!("a state was given"),
    }
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
        assert_eq!(Share::parse("3:125:1700000000123:0a1b2c3d").unwrap(), s);
        assert!(Share::parse("3:125:1700000000123:xyz").is_err());
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
        assert_eq!(parse_claim_state("done:13:redriven").unwrap(), (false, 13));
        assert_eq!(
            ClaimState::parse(Some("done:13:redriven")).unwrap(),
            ClaimState::Redriven { claimed_at_ms: 13 }
        );
        assert_eq!(ClaimState::parse(None).unwrap(), ClaimState::Unclaimed);
        // A coupon packet's claim keeps the id of the call that issued the coupon.
        assert_eq!(
            ClaimState::parse(Some("done:13:00000000000000c1")).unwrap(),
            ClaimState::Done { claimed_at_ms: 13 }
        );
        for bad in [
            "pending:13:redriven",
            "pending:13:00000000000000c1",
            "done:13:",
            "done:13:other",
            "done:x",
            "done",
            "done:13:redriven:1",
            "closed:13",
        ] {
            assert!(ClaimState::parse(Some(bad)).is_err(), "{bad}");
        }
        assert!(parse_claim_state("x").is_err());
    }
}
