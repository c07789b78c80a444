//! A red-packet create request and its limits: the red-packet settings, [`PacketRules`] (read
//! from them) and [`PacketRules::check`], which turns a [`PacketRequest`] into a
//! [`NewPacket`] or says which field breaks which rule.

use serde::Deserialize;

use crate::domain::settings::{self, Setting};
use crate::domain::split::{LuckySplit, Mode};
use crate::domain::{
    check_shown_text, is_user_id, ConfigError, Invalid, Lookup, MAX_USER_ID_CHARS,
};
use crate::packets::rules::password::{Password, PasswordText};

/// The longest a packet may stay open: 7 days, in seconds (the API's `expires_in_secs` bound).
pub const MAX_EXPIRES_IN_SECS: u64 = 604_800;

/// The latest a packet may open: 7 days after its creation, in seconds (the API's
/// `opens_in_secs` bound).
pub const MAX_OPENS_IN_SECS: u64 = 604_800;

/// The longest cover id, characters.
pub const MAX_COVER_CHARS: usize = 64;

/// Default `expires_in_secs`: one day.
pub const DEFAULT_EXPIRES_IN_SECS: u64 = 86_400;

/// Most recipients of a targeted packet.
pub const MAX_RECIPIENTS: usize = 500;

/// Most bytes (UTF-8) of a targeted packet's recipient ids together: 20 KiB, room for
/// [`MAX_RECIPIENTS`] UUIDs (36 bytes each, Cognito's `sub`) while one create can store no
/// more than that of ids, whatever characters they use (a user id may be up to 255 characters
/// of up to 4 bytes each).
pub const MAX_RECIPIENTS_BYTES: usize = 20_480;

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
/// `HONGBAO_COVERS`.
pub const COVERS: Setting = Setting {
    name: "HONGBAO_COVERS",
    default: settings::NO_DEFAULT,
    meaning: "the cover ids a packet may name, comma-separated (each 1–64 of `[A-Za-z0-9_.-]`); unset: any well-formed id",
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
/// `HONGBAO_PACKETS_PER_DAY`.
pub const PACKETS_PER_DAY: Setting = Setting {
    name: "HONGBAO_PACKETS_PER_DAY",
    default: "100",
    meaning: "red packets a sender may create per 24 hours (a fixed window opened by the first create; 429 + `Retry-After` beyond it, nothing written); `0` disables",
};
/// The window of [`PACKETS_PER_DAY`], milliseconds.
pub const PACKETS_DAY_WINDOW_MS: u64 = 86_400_000;
/// `HONGBAO_MAX_OPEN_PACKETS_PER_USER`.
pub const MAX_OPEN_PACKETS: Setting = Setting {
    name: "HONGBAO_MAX_OPEN_PACKETS_PER_USER",
    default: "100",
    meaning: "red packets one sender may have open at once (created, neither expired nor cancelled; a scheduled one from its creation): beyond it a create is 409 `too_many_open_packets`, nothing written; `0` disables",
};
/// The window of [`PACKETS_PER_MINUTE`], milliseconds.
pub const PACKETS_WINDOW_MS: u64 = 60_000;
/// `HONGBAO_GRAB_RATE_WINDOW_MS`.
pub const GRAB_RATE_WINDOW_MS: Setting = Setting {
    name: "HONGBAO_GRAB_RATE_WINDOW_MS",
    default: "1000",
    meaning: "rate-limit window, ms (≥ 1)",
};
/// `HONGBAO_GUESS_BUDGET`.
pub const GUESS_BUDGET: Setting = Setting {
    name: "HONGBAO_GUESS_BUDGET",
    default: "100",
    meaning: "wrong password guesses per password packet per guess window (every user's together); once a window holds that many, every user's guesses on that packet slow to one per window (429 + `Retry-After`) until it closes; the right password is never slowed; `0` disables",
};
/// `HONGBAO_GUESS_WINDOW_MS`.
pub const GUESS_WINDOW_MS: Setting = Setting {
    name: "HONGBAO_GUESS_WINDOW_MS",
    default: "10000",
    meaning: "the guess window of `HONGBAO_GUESS_BUDGET`, ms (≥ 1): a fixed window opened by a packet's first wrong guess after the last one closed",
};
/// `HONGBAO_GUESSES_PER_USER`.
pub const GUESSES_PER_USER: Setting = Setting {
    name: "HONGBAO_GUESSES_PER_USER",
    default: "10",
    meaning: "wrong password guesses one user may make on one password packet over its life; from then on their every password attempt on it, right or wrong, is 403 `guesses_exhausted` (at the default 10, finding a 6-digit password takes 50,000 accounts for even odds and 100,000 for certainty, a 4-digit one 500 and 1,000); `0` disables",
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
        "how long an `Idempotency-Key` (and a done claim's credit record) is remembered, s (≥ 960: Lambda's 900 s maximum timeout + 60 s)",
};

pub use crate::domain::resend::{
    LAMBDA_MAX_TIMEOUT_SECS, NODE_CLOCK_MARGIN_SECS, RESEND_HORIZON_SECS,
};

/// The shortest `HONGBAO_IDEMPOTENCY_TTL_SECS`, s: a done claim's credit record is kept this
/// long after the claim is marked done, and it must outlive every claim re-drive that read the
/// claim as pending before that (a claim request, a reclaim-cron run), or the late re-drive
/// would find no record and credit the share again. A re-drive runs inside one Lambda
/// invocation, so it ends within [`LAMBDA_MAX_TIMEOUT_SECS`]; [`NODE_CLOCK_MARGIN_SECS`] more
/// covers the clocks.
pub const MIN_IDEMPOTENCY_TTL_SECS: u64 = RESEND_HORIZON_SECS;

/// The red-packet settings, in the order of docs/configuration.md.
pub const SETTINGS: &[Setting] = &[
    MAX_COUNT,
    MAX_TOTAL_CENTS,
    GRAB_RATE_LIMIT,
    GRAB_RATE_WINDOW_MS,
    GUESS_BUDGET,
    GUESS_WINDOW_MS,
    GUESSES_PER_USER,
    PACKETS_PER_MINUTE,
    PACKETS_PER_DAY,
    MAX_OPEN_PACKETS,
    RETENTION_SECS,
    IDEMPOTENCY_TTL_SECS,
    COVERS,
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
    /// Wrong password guesses per password packet per [`Self::guess_window_ms`], every
    /// user's together, before every user's guesses on that packet slow to one per window;
    /// 0 disables the budget (`grab.lua`).
    pub guess_budget: u32,
    /// The window of [`Self::guess_budget`], milliseconds (≥ 1).
    pub guess_window_ms: u64,
    /// Wrong password guesses one user may make on one password packet over its life; then
    /// their every password attempt on it is refused (`grab.lua`); 0 disables.
    pub guesses_per_user: u32,
    /// Packets a sender may create per minute ([`PACKETS_WINDOW_MS`]); 0 disables the quota.
    pub packets_per_minute: u32,
    /// Packets a sender may create per 24 hours ([`PACKETS_DAY_WINDOW_MS`]); 0 disables.
    pub packets_per_day: u32,
    /// Packets one sender may have open at once (created, neither expired nor cancelled);
    /// 0 disables the bound (`create_packet.lua`).
    pub max_open_packets: u32,
    /// Seconds a settled packet's keys are kept (≥ `idempotency_ttl_secs`).
    pub retention_secs: u64,
    /// Seconds a create-packet `Idempotency-Key` is remembered, and a done claim's credit
    /// record (≥ 1).
    pub idempotency_ttl_secs: u64,
    /// The cover ids a packet may name (`HONGBAO_COVERS`, each [`is_cover_id`]); empty: any
    /// well-formed id.
    pub covers: Vec<String>,
}

/// Whether `id` is a well-formed cover id: 1 to [`MAX_COVER_CHARS`] characters of
/// `[A-Za-z0-9_.-]`, an opaque name the client maps to artwork.
pub fn is_cover_id(id: &str) -> bool {
    (1..=MAX_COVER_CHARS).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// `HONGBAO_COVERS`: a comma-separated list of cover ids (blanks around entries ignored).
fn covers(lookup: &Lookup<'_>) -> Result<Vec<String>, ConfigError> {
    let Some(raw) = lookup.raw(&COVERS) else {
        return Ok(Vec::new());
    };
    let mut ids = Vec::new();
    for id in raw.split(',').map(str::trim).filter(|id| !id.is_empty()) {
        if !is_cover_id(id) {
            return Err(ConfigError::new(
                &COVERS,
                &raw,
                format!("{id:?} is not a cover id (1 to {MAX_COVER_CHARS} of [A-Za-z0-9_.-])"),
            ));
        }
        ids.push(id.to_string());
    }
    Ok(ids)
}

impl Default for PacketRules {
    fn default() -> Self {
        Self::from_lookup(&settings::defaults()).expect("the defaults are valid")
    }
}

/// `HONGBAO_IDEMPOTENCY_TTL_SECS`, refused below [`MIN_IDEMPOTENCY_TTL_SECS`] with the
/// timeouts it follows from.
fn idempotency_ttl_secs(lookup: &Lookup<'_>) -> Result<u64, ConfigError> {
    let secs: u64 = lookup.get(&IDEMPOTENCY_TTL_SECS)?;
    if secs < MIN_IDEMPOTENCY_TTL_SECS {
        return Err(ConfigError::new(
            &IDEMPOTENCY_TTL_SECS,
            secs,
            format!(
                "must be at least {MIN_IDEMPOTENCY_TTL_SECS}: a done claim's credit record is kept \
                 this long and must outlive every claim re-drive that saw the claim pending (the \
                 claim function and reclaim-cron run at most Lambda's maximum timeout, \
                 {LAMBDA_MAX_TIMEOUT_SECS} s), plus {NODE_CLOCK_MARGIN_SECS} s for the Redis nodes' clocks"
            ),
        ));
    }
    Ok(secs)
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
            guess_budget: lookup.get(&GUESS_BUDGET)?,
            guess_window_ms: lookup.at_least(&GUESS_WINDOW_MS, 1)?,
            guesses_per_user: lookup.get(&GUESSES_PER_USER)?,
            packets_per_minute: lookup.get(&PACKETS_PER_MINUTE)?,
            packets_per_day: lookup.get(&PACKETS_PER_DAY)?,
            max_open_packets: lookup.get(&MAX_OPEN_PACKETS)?,
            retention_secs: lookup.get(&RETENTION_SECS)?,
            idempotency_ttl_secs: idempotency_ttl_secs(lookup)?,
            covers: covers(lookup)?,
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
    /// un-pins it; until then it is kept for ever): `HONGBAO_IDEMPOTENCY_TTL_SECS`, and never
    /// less than [`MIN_IDEMPOTENCY_TTL_SECS`] (the settings refuse a shorter value; a rule set
    /// built in code is held to it here), longer than any request or reclaim run that saw the
    /// claim pending can still be running.
    pub fn claim_record_keep_ms(&self) -> u64 {
        self.idempotency_ttl_secs.max(MIN_IDEMPOTENCY_TTL_SECS) * 1000
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
                let bytes: usize = ids.iter().map(String::len).sum();
                if bytes > MAX_RECIPIENTS_BYTES {
                    return Err(Invalid(format!(
                        "recipients' ids must add up to at most {MAX_RECIPIENTS_BYTES} bytes \
                         (UTF-8), not {bytes}"
                    )));
                }
                if let Some(bad) = ids.iter().find(|id| !is_user_id(id)) {
                    return Err(Invalid(format!(
                        "recipient {:?} is not a user id (1 to {} printable characters)",
                        bad.chars().take(64).collect::<String>(),
                        MAX_USER_ID_CHARS
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
        let opens = req.opens_in_secs.unwrap_or(0);
        if !(0..=MAX_OPENS_IN_SECS as i64).contains(&opens) {
            return Err(Invalid(format!(
                "opens_in_secs must be 0..={MAX_OPENS_IN_SECS}"
            )));
        }
        if let Some(cover) = &req.cover {
            if !is_cover_id(cover) {
                return Err(Invalid(format!(
                    "cover must be 1 to {MAX_COVER_CHARS} characters of [A-Za-z0-9_.-]"
                )));
            }
            if !self.covers.is_empty() && !self.covers.contains(cover) {
                return Err(Invalid::new(
                    "cover is not one of this deployment's covers (HONGBAO_COVERS)",
                ));
            }
        }
        let password = req.password.as_ref().map(PasswordText::check).transpose()?;
        let draw = match &req.draw {
            None => None,
            Some(d) => {
                let terms = d.terms()?;
                if d.entry_secs >= expires {
                    return Err(Invalid::new(
                        "draw.entry_secs must be less than expires_in_secs: the winners claim after the draw, before the packet expires",
                    ));
                }
                Some(terms)
            }
        };
        if let Some(g) = &req.greeting {
            if g.chars().count() > MAX_GREETING_CHARS {
                return Err(Invalid(format!(
                    "greeting must be at most {MAX_GREETING_CHARS} characters"
                )));
            }
            check_shown_text("greeting", g)?;
        }
        Ok(NewPacket {
            total_cents: req.total_cents,
            count: req.count as u32,
            mode,
            split: req.split.unwrap_or(LuckySplit::DoubleMean),
            expires_in_secs: expires as u64,
            greeting: req.greeting.filter(|g| !g.is_empty()),
            recipients,
            opens_in_secs: opens as u64,
            cover: req.cover,
            password,
            draw,
        })
    }
}

/// The body of `POST /packets` (unknown fields are refused), as the client sent it, before
/// [`PacketRules::check`]. Its field docs are the OpenAPI document's.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(description = "The body of `POST /packets` (unknown fields are refused).")]
pub struct PacketRequest {
    /// Total, cents (integer, `count..=HONGBAO_MAX_TOTAL_CENTS`; for a `fixed` packet a
    /// multiple of `count`, every share being the same).
    #[schema(minimum = 1)]
    pub total_cents: i64,
    /// Number of shares (`1..=HONGBAO_MAX_COUNT`).
    #[schema(minimum = 1)]
    pub count: i64,
    /// The split: `lucky` (default) or `fixed`.
    #[serde(default)]
    pub mode: Option<Mode>,
    /// The lucky split algorithm (default `double_mean`); lucky packets only.
    #[serde(default)]
    pub split: Option<LuckySplit>,
    /// Seconds until the packet expires (`1..=604800`, default 86400).
    #[serde(default)]
    #[schema(minimum = 1, maximum = 604_800)]
    pub expires_in_secs: Option<i64>,
    /// At most 100 characters, no control, invisible format or filler character (default
    /// ignorable code points are allowed only inside emoji sequences).
    #[serde(default)]
    #[schema(max_length = 100)]
    pub greeting: Option<String>,
    /// A targeted packet: the only users who may grab it or see it (besides the sender),
    /// 1 to 500 distinct user ids, at least `count` of them, at most 20,480 bytes (UTF-8)
    /// together.
    #[serde(default)]
    #[schema(min_items = 1, max_items = 500)]
    pub recipients: Option<Vec<String>>,
    /// Seconds from creation until grabs open (`0..=604800`, default 0: at once); a grab
    /// before then is 425 `not_open_yet`. The total is debited at creation, and
    /// `expires_in_secs` counts from the opening.
    #[serde(default)]
    #[schema(minimum = 0, maximum = 604_800)]
    pub opens_in_secs: Option<i64>,
    /// A cover id the client maps to artwork: 1 to 64 characters of `[A-Za-z0-9_.-]` (one of
    /// `HONGBAO_COVERS` when the deployment sets it).
    #[serde(default)]
    #[schema(pattern = "^[A-Za-z0-9_.-]{1,64}$")]
    pub cover: Option<String>,
    /// A password packet (口令红包): grabbers must send this phrase in the grab's body. 1 to
    /// 32 characters after NFC normalisation, compared case-sensitively, no control,
    /// invisible or filler character. Stored only as an HMAC verifier; never returned.
    #[serde(default)]
    #[schema(value_type = Option<String>, min_length = 1, max_length = 32)]
    pub password: Option<PasswordText>,
    /// A draw packet: grabs in the entry window enter a draw (202) instead of taking shares
    /// first come, first served; at `draw_at` the entrants with the smallest tickets win
    /// (docs/design.md, "Draws").
    #[serde(default)]
    pub draw: Option<crate::draws::rules::DrawRequest>,
}

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
    /// Seconds the packet stays open for grabs and claims, counted from its opening
    /// (`1..=604800`).
    pub expires_in_secs: u64,
    /// Optional greeting, at most 100 characters, none of them control or invisible format
    /// characters ([`check_shown_text`]).
    pub greeting: Option<String>,
    /// A targeted packet's recipients, sorted and distinct (at least `count` of them); empty:
    /// anyone may grab. Enforced inside `grab.lua`.
    pub recipients: Vec<String>,
    /// Seconds from creation until grabs open (`0..=604800`): a grab before `opens_at` is
    /// refused by `grab.lua` with nothing written. The money is debited at creation.
    pub opens_in_secs: u64,
    /// The cover id, if any ([`is_cover_id`], and one of `HONGBAO_COVERS` when that is set).
    pub cover: Option<String>,
    /// A password packet's password (NFC); grabs must send it. Enforced inside
    /// `grab.lua` by its verifier.
    pub password: Option<Password>,
    /// A draw packet's terms: grabs during the entry window enter the draw, whose winners
    /// get the shares (`grab.lua`, `lua/draw_run.lua`); `None`: first come, first served.
    pub draw: Option<crate::draws::rules::DrawTerms>,
}

impl NewPacket {
    /// Seconds from creation until the packet expires: its opening, then `expires_in_secs`.
    pub fn lifetime_secs(&self) -> u64 {
        self.opens_in_secs + self.expires_in_secs
    }

    /// Seconds from creation until reclaim-cron first looks at the packet (the reclaim
    /// index's first due time): a draw packet's draw (its opening, then the entry window),
    /// after which the entry moves to the expiry; any other packet's expiry.
    pub fn first_due_secs(&self) -> u64 {
        match self.draw {
            Some(draw) => self.opens_in_secs + draw.entry_secs,
            None => self.lifetime_secs(),
        }
    }

    /// The split name stored for this packet: `None` for fixed packets.
    pub fn split_name(&self) -> Option<&'static str> {
        match self.mode {
            Mode::Fixed => None,
            Mode::Lucky => Some(self.split.as_str()),
        }
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
        assert_eq!((d.guess_budget, d.guess_window_ms), (100, 10_000));
        assert_eq!(
            (d.retention_secs, d.idempotency_ttl_secs),
            (604_800, 86_400)
        );
        for (name, value) in [
            ("HONGBAO_MAX_COUNT", "0"),
            ("HONGBAO_MAX_TOTAL_CENTS", "0"),
            ("HONGBAO_IDEMPOTENCY_TTL_SECS", "0"),
            ("HONGBAO_GRAB_RATE_WINDOW_MS", "0"),
            ("HONGBAO_GRAB_RATE_LIMIT", "-1"),
            ("HONGBAO_GUESS_BUDGET", "-1"),
            ("HONGBAO_GUESS_WINDOW_MS", "0"),
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
    }

    /// A done claim's credit record must outlive every re-drive that saw the claim pending:
    /// the TTL that keeps it is refused below Lambda's maximum timeout plus the clock margin,
    /// with a message naming them; a rule set built in code keeps the record that long anyway.
    #[test]
    fn idempotency_ttl_outlives_every_redrive() {
        assert_eq!(MIN_IDEMPOTENCY_TTL_SECS, 960);
        for short in ["1", "60", "959"] {
            let e = rules("HONGBAO_IDEMPOTENCY_TTL_SECS", short).unwrap_err();
            assert_eq!(e.name, "HONGBAO_IDEMPOTENCY_TTL_SECS");
            assert!(
                e.reason.contains("at least 960") && e.reason.contains("900 s"),
                "{e}"
            );
        }
        let at_min = rules("HONGBAO_IDEMPOTENCY_TTL_SECS", "960").unwrap();
        assert_eq!(at_min.claim_record_keep_ms(), 960_000);
        let built = PacketRules {
            idempotency_ttl_secs: 1,
            ..PacketRules::default()
        };
        assert_eq!(built.claim_record_keep_ms(), 960_000);
    }

    /// A targeted packet's recipient ids add up to at most [`MAX_RECIPIENTS_BYTES`] bytes:
    /// 500 UUIDs fit; 100 ids of 255 characters of three bytes each (76,500 bytes) are
    /// refused, naming the bound in bytes.
    #[test]
    fn recipients_are_bounded_in_bytes() {
        let req = |ids: Vec<String>| -> PacketRequest {
            serde_json::from_value(
                serde_json::json!({"total_cents": 100, "count": 1, "recipients": ids}),
            )
            .unwrap()
        };
        let uuids = (0..500)
            .map(|i| format!("{i:08}-0000-4000-8000-000000000000"))
            .collect();
        let wide = (0..100)
            .map(|i| format!("{i:03}{}", "字".repeat(252)))
            .collect();

        let fits = PacketRules::default().check(req(uuids));
        let refused = PacketRules::default().check(req(wide)).unwrap_err();

        assert!(fits.is_ok(), "{fits:?}");
        assert!(refused.0.contains("at most 20480 bytes"), "{refused:?}");
    }
}
