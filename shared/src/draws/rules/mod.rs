//! A draw: who wins a packet's shares (or a campaign's codes) when its entry window closes,
//! decided by a seed committed before the first entry, so that arriving first gives no edge and
//! anyone can check the result afterwards.
//!
//! The rule, versioned by [`COMMITMENT_PREFIX`]:
//!
//! * At creation a 32-byte seed is drawn with a CSPRNG and kept secret; the packet publishes
//!   `draw_commitment = hex(SHA-256("hongbao-draw-v1:" + seed hex))` ([`commitment`]).
//! * An entrant's ticket is `hex(HMAC-SHA256(key = the seed's 32 bytes, message = user_id))`
//!   ([`ticket`]): 64 lowercase hex digits, so comparing tickets as text compares them as
//!   numbers. Entering earlier or more often changes nothing about it.
//! * At the draw the `count` entrants with the smallest tickets win, the smallest first: share
//!   (or code) 1 goes to the smallest ticket ([`winners`]). With fewer entrants than shares
//!   every entrant wins.
//! * After the draw the seed is revealed with the number of entrants, of winners and the
//!   threshold: the largest winning ticket ([`Reveal`]). An entrant checks that the seed hashes
//!   to the commitment, that their ticket is what the seed gives, and that they won exactly when
//!   their ticket is at most the threshold ([`Reveal::check_entrant`]); with the winners' list
//!   anyone checks its order too ([`Reveal::check_winners`]).
//!
//! In Python, for an entrant `user` of a revealed draw `d`:
//!
//! ```text
//! import hashlib, hmac
//! assert hashlib.sha256(("hongbao-draw-v1:" + d["seed"]).encode()).hexdigest() == d["commitment"]
//! ticket = hmac.new(bytes.fromhex(d["seed"]), user.encode(), "sha256").hexdigest()
//! assert ticket == d["ticket"]
//! print("won" if d["threshold"] is not None and ticket <= d["threshold"] else "not drawn")
//! ```

use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};

use crate::domain::Invalid;
use crate::packets::rules::receipt::{hex, is_digest_hex};

/// The domain-separation prefix of the committed text (a later rule gets a new prefix).
pub const COMMITMENT_PREFIX: &str = "hongbao-draw-v1:";

/// Bytes of a draw's seed.
pub const SEED_BYTES: usize = 32;

/// The shortest entry window, seconds.
pub const MIN_ENTRY_SECS: i64 = 10;

/// The longest entry window, seconds (a day).
pub const MAX_ENTRY_SECS: i64 = 86_400;

/// A create request's `draw` (unknown fields are refused), as the client sent it, before
/// `PacketRules::check` or a campaign's check.
#[derive(Debug, Clone, serde::Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(description = "A create request's `draw` (unknown fields are refused).")]
pub struct DrawRequest {
    /// Seconds entries are taken after the packet opens or the campaign starts
    /// (`10..=86400`; a packet's less than `expires_in_secs`, a campaign's draw before
    /// `ends_at`): `draw_at` is the opening or the start plus this.
    #[schema(minimum = 10, maximum = 86_400)]
    pub entry_secs: i64,
}

/// A draw's terms: the entry window after the packet's opening or the campaign's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DrawTerms {
    /// Seconds entries are taken, from the packet's opening or the campaign's start
    /// ([`MIN_ENTRY_SECS`]`..=`[`MAX_ENTRY_SECS`], and less than the packet's life or the
    /// campaign's: its winners claim or grab after the draw).
    pub entry_secs: u64,
}

impl DrawRequest {
    /// The terms asked for, once `entry_secs` is in
    /// [`MIN_ENTRY_SECS`]`..=`[`MAX_ENTRY_SECS`] (the caller checks it against the packet's
    /// or campaign's life).
    ///
    /// # Errors
    /// [`Invalid`] naming `draw.entry_secs` and the range.
    pub fn terms(&self) -> Result<DrawTerms, Invalid> {
        if !(MIN_ENTRY_SECS..=MAX_ENTRY_SECS).contains(&self.entry_secs) {
            return Err(Invalid::new(format!(
                "draw.entry_secs must be {MIN_ENTRY_SECS}..={MAX_ENTRY_SECS}"
            )));
        }
        Ok(DrawTerms {
            entry_secs: self.entry_secs as u64,
        })
    }
}

/// The draw seed of a campaign (64 lowercase hex digits): `HMAC-SHA256(key = the campaign's
/// code secret's bytes, message = "hongbao-draw-seed-v1:" + campaign_id)`. The code secret is
/// drawn with the OS CSPRNG when the campaign is first recorded and every retry of the
/// creation reads the stored one, so each retry commits to the same seed; HMAC is a
/// pseudo-random function, so the revealed seed tells nothing of the secret (which keys the
/// generated codes). `None` when `secret_hex` is not hex of at least 16 bytes.
pub fn campaign_seed(secret_hex: &str, campaign_id: &str) -> Option<String> {
    if secret_hex.len() < 32
        || !secret_hex.len().is_multiple_of(2)
        || !secret_hex.bytes().all(|b| b.is_ascii_hexdigit())
    {
        return None;
    }
    let key: Vec<u8> = (0..secret_hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&secret_hex[i..i + 2], 16))
        .collect::<Result<_, _>>()
        .ok()?;
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).ok()?;
    mac.update(CAMPAIGN_SEED_PREFIX.as_bytes());
    mac.update(campaign_id.as_bytes());
    Some(hex(&mac.finalize().into_bytes()))
}

/// The domain-separation prefix of a campaign's seed ([`campaign_seed`]).
pub const CAMPAIGN_SEED_PREFIX: &str = "hongbao-draw-seed-v1:";

/// A fresh seed from `rng` (a CSPRNG in production: `rand::rng()`), as 64 lowercase hex
/// digits.
pub fn new_seed(rng: &mut impl rand::Rng) -> String {
    let mut seed = [0u8; SEED_BYTES];
    rng.fill(&mut seed[..]);
    hex(&seed)
}

/// The commitment to `seed_hex`: 64 lowercase hex digits of
/// `SHA-256("hongbao-draw-v1:" + seed_hex)`.
pub fn commitment(seed_hex: &str) -> String {
    let mut h = Sha256::new();
    h.update(COMMITMENT_PREFIX.as_bytes());
    h.update(seed_hex.as_bytes());
    hex(&h.finalize())
}

/// `user_id`'s ticket in the draw of `seed_hex` (64 lowercase hex digits): 64 lowercase hex
/// digits of `HMAC-SHA256(key = the seed's bytes, message = user_id)`. `None` when `seed_hex`
/// is not 64 lowercase hex digits.
pub fn ticket(seed_hex: &str, user_id: &str) -> Option<String> {
    if !is_digest_hex(seed_hex) {
        return None;
    }
    let key: Vec<u8> = (0..seed_hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&seed_hex[i..i + 2], 16))
        .collect::<Result<_, _>>()
        .ok()?;
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).ok()?;
    mac.update(user_id.as_bytes());
    Some(hex(&mac.finalize().into_bytes()))
}

/// The winners of the draw of `seed_hex` among `entrants` (each user once; repeats count
/// once) for `count` shares: `(ticket, user_id)` of the `min(count, entrants)` smallest
/// tickets, smallest first (share 1 first). The reference the stored draw is checked
/// against; `None` when the seed is malformed.
pub fn winners(seed_hex: &str, entrants: &[&str], count: usize) -> Option<Vec<(String, String)>> {
    let mut tickets = entrants
        .iter()
        .map(|u| Some((ticket(seed_hex, u)?, (*u).to_string())))
        .collect::<Option<Vec<_>>>()?;
    tickets.sort();
    tickets.dedup();
    tickets.truncate(count);
    Some(tickets)
}

/// A draw packet's or campaign's draw as stored (docs/design.md, "Draws").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Draw {
    /// When entries close and the draw happens, Unix ms (Redis `TIME`).
    pub draw_at_ms: i64,
    /// The commitment to the seed, 64 hex digits, published at creation.
    pub commitment: String,
    /// The seed, 64 hex digits: secret until the draw is complete (never in an answer before
    /// `result` is set).
    pub seed: String,
    /// The draw's result once complete.
    pub result: Option<DrawResult>,
}

/// A complete draw's figures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DrawResult {
    /// How many users entered.
    pub entrants: u64,
    /// How many won: `min(count, entrants)` (a campaign's count: its codes).
    pub winners: u64,
    /// The largest winning ticket; `None` when nobody entered.
    pub threshold: Option<String>,
    /// When the draw completed, Unix ms (Redis `TIME`).
    pub drawn_at_ms: i64,
}

/// A draw as its view reveals it once run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reveal {
    /// The commitment published at creation (64 lowercase hex digits).
    pub commitment: String,
    /// The seed (64 lowercase hex digits).
    pub seed: String,
    /// How many users entered.
    pub entrants: u64,
    /// How many won: `min(count, entrants)`.
    pub winners: u64,
    /// The largest winning ticket; `None` when nobody entered.
    pub threshold: Option<String>,
}

/// Why a reveal does not check out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mismatch {
    /// The seed does not hash to the commitment (or is malformed).
    Commitment,
    /// A ticket is not what the seed gives its user.
    Ticket,
    /// An entrant's result disagrees with the threshold: a winner above it, or a loser at or
    /// below it.
    Threshold,
    /// The winners are not in ticket order, their count is not `winners`, or the last one's
    /// ticket is not the threshold.
    Order,
}

impl Reveal {
    /// Checks one entrant's result: the seed matches the commitment, `ticket` is what the seed
    /// gives `user_id`, and `won` holds exactly when the ticket is at most the threshold.
    ///
    /// # Errors
    /// The first [`Mismatch`] found.
    pub fn check_entrant(
        &self,
        user_id: &str,
        ticket_hex: &str,
        won: bool,
    ) -> Result<(), Mismatch> {
        self.check_seed()?;
        if ticket(&self.seed, user_id).as_deref() != Some(ticket_hex) {
            return Err(Mismatch::Ticket);
        }
        let under = self.threshold.as_deref().is_some_and(|t| ticket_hex <= t);
        if under != won {
            return Err(Mismatch::Threshold);
        }
        Ok(())
    }

    /// Checks the winners' list (user ids in share order, share 1 first): the seed matches the
    /// commitment, there are `winners` of them, their tickets strictly increase, and the last
    /// one's is the threshold. (That no entrant with a smaller ticket was passed over each
    /// entrant checks with [`Reveal::check_entrant`].)
    ///
    /// # Errors
    /// The first [`Mismatch`] found.
    pub fn check_winners(&self, winners: &[&str]) -> Result<(), Mismatch> {
        self.check_seed()?;
        let tickets: Vec<String> = winners
            .iter()
            .map(|u| ticket(&self.seed, u).ok_or(Mismatch::Commitment))
            .collect::<Result<_, _>>()?;
        let ordered = tickets.windows(2).all(|w| w[0] < w[1]);
        if !ordered
            || tickets.len() as u64 != self.winners
            || tickets.last() != self.threshold.as_ref()
        {
            return Err(Mismatch::Order);
        }
        Ok(())
    }

    fn check_seed(&self) -> Result<(), Mismatch> {
        if !is_digest_hex(&self.seed) || commitment(&self.seed) != self.commitment {
            return Err(Mismatch::Commitment);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
