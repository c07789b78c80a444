//! Red-packet split algorithms: how a packet's total is divided into shares.
//!
//! All money is integer **cents** (`i64`); no floating point is used anywhere
//! in this module. Every split returns exactly `count` shares, in grab order
//! (index 0 is handed to the first grabber), every share is at least 1 cent,
//! and the shares sum exactly to the total.
//!
//! Three rules are provided:
//!
//! * [`fixed`] — every share is `total / count` (the "normal" packet).
//! * [`double_mean`] — WeChat's "double mean" (二倍均值) rule, with an integer
//!   rounding correction so that the expected share is exactly
//!   `total / count` at every position.
//! * [`line_cut`] — "board cutting" (插板法 / line cutting): a uniformly random
//!   composition of the total into `count` positive parts.
//!
//! Callers in production must pass a cryptographically secure RNG
//! (`rand::rngs::StdRng` seeded from the OS, or `rand::rng()`'s `ThreadRng`);
//! tests pass `StdRng::seed_from_u64` for determinism.

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;

use rand::Rng;
use serde::{Deserialize, Serialize};

/// How a lucky (random) packet's total is divided.
///
/// Serialised (serde, [`LuckySplit::as_str`], [`FromStr`], [`fmt::Display`]) as
/// `"double_mean"` or `"line_cut"`. Only consulted when the packet's [`Mode`]
/// is [`Mode::Lucky`].
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(
    description = "The lucky split algorithm: `double_mean` (WeChat's: each share uniform in `[1, 2 × remaining mean]`) or `line_cut` (cut points on a line)."
)]
pub enum LuckySplit {
    /// WeChat's double-mean rule, see [`double_mean`].
    DoubleMean,
    /// Uniform random composition ("board cutting"), see [`line_cut`].
    LineCut,
}

impl LuckySplit {
    /// The wire name: `"double_mean"` or `"line_cut"` (same as serde).
    pub const fn as_str(self) -> &'static str {
        match self {
            LuckySplit::DoubleMean => "double_mean",
            LuckySplit::LineCut => "line_cut",
        }
    }
}

impl fmt::Display for LuckySplit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for LuckySplit {
    type Err = ParseKindError;

    /// Parses the exact wire names `"double_mean"` / `"line_cut"`
    /// (case-sensitive, like serde). Any other string is a [`ParseKindError`].
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "double_mean" => Ok(LuckySplit::DoubleMean),
            "line_cut" => Ok(LuckySplit::LineCut),
            _ => Err(ParseKindError {
                expected: "\"double_mean\" or \"line_cut\"",
                value: s.to_owned(),
            }),
        }
    }
}

/// Whether a packet's shares are random ("lucky") or all equal ("fixed").
///
/// Serialised (serde, [`Mode::as_str`], [`FromStr`], [`fmt::Display`]) as
/// `"lucky"` or `"fixed"`.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(
    description = "How a packet is split: `lucky` (random amounts, the split algorithm decides) or `fixed` (equal amounts: `total_cents` must be divisible by `count`, 400 otherwise)."
)]
pub enum Mode {
    /// Random shares, divided according to a [`LuckySplit`].
    Lucky,
    /// Equal shares, see [`fixed`]; the total must be divisible by the count.
    Fixed,
}

impl Mode {
    /// The wire name: `"lucky"` or `"fixed"` (same as serde).
    pub const fn as_str(self) -> &'static str {
        match self {
            Mode::Lucky => "lucky",
            Mode::Fixed => "fixed",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Mode {
    type Err = ParseKindError;

    /// Parses the exact wire names `"lucky"` / `"fixed"` (case-sensitive,
    /// like serde). Any other string is a [`ParseKindError`].
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "lucky" => Ok(Mode::Lucky),
            "fixed" => Ok(Mode::Fixed),
            _ => Err(ParseKindError {
                expected: "\"lucky\" or \"fixed\"",
                value: s.to_owned(),
            }),
        }
    }
}

/// Error from parsing a [`Mode`] or [`LuckySplit`] with [`FromStr`]:
/// the string was not one of the wire names.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[error("unknown value {value:?}, expected {expected}")]
pub struct ParseKindError {
    /// Human-readable list of the accepted names.
    pub expected: &'static str,
    /// The rejected input.
    pub value: String,
}

/// Why a total (in cents) cannot be split into the requested number of shares.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SplitError {
    /// `count` was 0: a packet must have at least one share.
    #[error("a red packet needs at least 1 share, got count 0")]
    ZeroCount,
    /// `total_cents < count`: every share must be at least 1 cent
    /// (this also covers zero and negative totals).
    #[error("{total_cents} cents cannot be split into {count} shares of at least 1 cent each")]
    TotalTooSmall {
        /// The requested total, in cents.
        total_cents: i64,
        /// The requested number of shares.
        count: u32,
    },
    /// Fixed mode with `total_cents % count != 0`: equal shares are impossible.
    #[error("fixed split: {total_cents} cents is not divisible into {count} equal shares")]
    NotDivisible {
        /// The requested total, in cents.
        total_cents: i64,
        /// The requested number of shares.
        count: u32,
    },
}

/// Checks the preconditions common to every split: `count >= 1` and
/// `total_cents >= count`. Returns the total as `u64` on success.
fn validate(total_cents: i64, count: u32) -> Result<u64, SplitError> {
    if count == 0 {
        return Err(SplitError::ZeroCount);
    }
    if total_cents < i64::from(count) {
        return Err(SplitError::TotalTooSmall { total_cents, count });
    }
    // total_cents >= count >= 1, so the conversion is lossless.
    Ok(total_cents as u64)
}

/// Splits `total_cents` (integer cents) into `count` shares, in grab order.
///
/// * `mode == Mode::Fixed` → [`fixed`]; `lucky` is ignored.
/// * `mode == Mode::Lucky` → [`double_mean`] or [`line_cut`] according to `lucky`.
///
/// Returns a `Vec` of exactly `count` shares (cents), each `>= 1`, summing
/// exactly to `total_cents`; index 0 goes to the first grabber.
///
/// # Errors
/// [`SplitError::ZeroCount`] if `count == 0`; [`SplitError::TotalTooSmall`] if
/// `total_cents < count`; [`SplitError::NotDivisible`] in fixed mode if
/// `total_cents % count != 0`.
///
/// `rng` must be a CSPRNG in production (`StdRng`/`ThreadRng`); it is not used
/// in fixed mode.
pub fn split<R: Rng + ?Sized>(
    total_cents: i64,
    count: u32,
    mode: Mode,
    lucky: LuckySplit,
    rng: &mut R,
) -> Result<Vec<i64>, SplitError> {
    match (mode, lucky) {
        (Mode::Fixed, _) => fixed(total_cents, count),
        (Mode::Lucky, LuckySplit::DoubleMean) => double_mean(total_cents, count, rng),
        (Mode::Lucky, LuckySplit::LineCut) => line_cut(total_cents, count, rng),
    }
}

/// Fixed ("normal") packet: `count` equal shares of `total_cents / count` cents.
///
/// Returns a `Vec` of exactly `count` equal shares (cents), each `>= 1`.
///
/// # Errors
/// [`SplitError::ZeroCount`] if `count == 0`; [`SplitError::TotalTooSmall`] if
/// `total_cents < count`; [`SplitError::NotDivisible`] if
/// `total_cents % count != 0` (no rounding is ever done: money is never
/// silently dropped or created).
pub fn fixed(total_cents: i64, count: u32) -> Result<Vec<i64>, SplitError> {
    validate(total_cents, count)?;
    let c = i64::from(count);
    if total_cents % c != 0 {
        return Err(SplitError::NotDivisible { total_cents, count });
    }
    Ok(vec![total_cents / c; count as usize])
}

/// Parameters of one double-mean draw with `remaining` cents and `left`
/// shares still to hand out (`left >= 2`, `remaining >= left`).
///
/// Returns `(q, r)` with `2 * remaining = q * left + r`, `0 <= r < left`.
/// The share is uniform on `1..=q` with probability `r / left` and uniform on
/// `1..=q - 1` otherwise (see [`double_mean`]).
fn double_mean_params(remaining: u64, left: u64) -> (u64, u64) {
    // remaining <= i64::MAX, so 2 * remaining fits in u64.
    let twice = 2 * remaining;
    (twice / left, twice % left)
}

/// Lucky packet by WeChat's "double mean" (二倍均值) rule, in integer cents.
///
/// **Rule (source):** the widely described WeChat algorithm, as given in the
/// blog post "Redis构建严谨的红包回收机制" (seed
/// `/work/shared/seeds/003_af72b6b9470535e5.txt`): while more than one share is
/// left, the next share is drawn uniformly between 1 cent and twice the mean of
/// what is left (`2 × remaining / left`); the last share takes the remainder.
///
/// **Integer correction (this implementation):** the source draws
/// `math.random(1, floor(2 × remaining / left))` (in cents). A uniform draw on
/// `1..=M` has mean `(1 + M) / 2`, so with `M = floor(2R/L)` (`R` = remaining
/// cents, `L` = shares left) the mean is `R/L + (1 − r/L)/2` where `r` is
/// defined below: up to half a cent too much per draw (exactly `+½` whenever
/// `L` divides `2R`); the excess is taken from later grabbers, most from the
/// last ones (measured: the last of 30 shares of 300 cents gets ~9% less than
/// the mean). The mean is exactly `R/L` iff `M = 2R/L − 1`, which is generally
/// not an integer, so the upper bound is randomised between the two
/// neighbouring integers. Write `2R = q·L + r` with `0 <= r < L`; the share is
///
/// * with probability `r / L`: uniform on `1..=q`,
/// * otherwise (probability `(L − r) / L`): uniform on `1..=q − 1`.
///
/// Hence `E[M] = q − 1 + r/L = 2R/L − 1` and, since the conditional mean
/// `(1 + M)/2` is linear in `M`, `E[share | R, L] = R/L` **exactly**. So
/// `R/L` is a martingale (`E[(R − share)/(L − 1)] = R/L`), and by the tower
/// property the expected share at **every** position, the last one included,
/// is exactly `total_cents / count`.
///
/// This mixture is sampled with integer draws only, using about one draw per
/// share: draw `y` uniform on `1..=q`; if `y < q` it is the share; if `y == q`
/// (probability `1/q`), keep it with probability `r/L`
/// (`random_range(0..L) < r`), otherwise redraw uniformly on `1..=q − 1`.
/// Check: `P(x) = 1/q + (1/q)(1 − r/L)/(q − 1) = (r/L)/q + (1 − r/L)/(q − 1)`
/// for `x < q`, and `P(q) = (r/L)/q`, which is exactly the mixture above.
///
/// **Bounds:** `R >= L` gives `q >= 2`, so `1..=q − 1` is never empty. Every
/// share is at most `floor(2R/L)` (at most `2R/L − 1` when `L` divides `2R`,
/// since then `r = 0` and `q` is never kept) and at most `R − (L − 1)`, so
/// every later share can still get 1 cent: from `(R − L)(L − 2) >= 0` follows
/// `2R/L − 1 <= R − L + 1`, hence `q − 1 <= R − L + 1`, and if `r > 0` then
/// `q < 2R/L <= R − L + 2`. So the `min(2R/L, R − (L − 1))` bound of the rule
/// never needs clamping (no clamp is applied, which would bias the mean; the
/// bound is `debug_assert`ed and checked by the property tests).
///
/// Returns exactly `count` shares (cents) in grab order, each `>= 1`, summing
/// exactly to `total_cents`. `O(count)` time.
///
/// # Errors
/// [`SplitError::ZeroCount`] if `count == 0`; [`SplitError::TotalTooSmall`] if
/// `total_cents < count`.
pub fn double_mean<R: Rng + ?Sized>(
    total_cents: i64,
    count: u32,
    rng: &mut R,
) -> Result<Vec<i64>, SplitError> {
    let mut remaining = validate(total_cents, count)?;
    let mut shares = Vec::with_capacity(count as usize);
    for left in (2..=u64::from(count)).rev() {
        let (q, r) = double_mean_params(remaining, left);
        let mut share = rng.random_range(1..=q);
        if share == q && (r == 0 || rng.random_range(0..left) >= r) {
            share = rng.random_range(1..=q - 1);
        }
        debug_assert!(share >= 1 && share <= remaining - (left - 1));
        remaining -= share;
        shares.push(share as i64);
    }
    shares.push(remaining as i64);
    Ok(shares)
}

/// Lucky packet by "board cutting" (插板法): a uniformly random composition of
/// `total_cents` into `count` positive parts (cents).
///
/// **Rule:** choose `count − 1` **distinct** cut points uniformly at random
/// among the `total_cents − 1` interior positions `1..=total_cents − 1`, sort
/// them, and take the differences between consecutive points (with `0` and
/// `total_cents` as the ends). Every one of the `C(total − 1, count − 1)`
/// compositions is equally likely, so every position has the same
/// distribution and expected share `total_cents / count`.
///
/// **Source and corrections:** the "board cutting" from the blog post
/// "redis+lua实现抢红包" (seed `/work/shared/seeds/000_5fa8ad2e89b5548d.txt`).
/// That code gives each share 1 cent and then draws `count − 1` cut points
/// *with replacement* by `nextInt(total − count)`, i.e. in `0..total − count`.
/// This fixes both of its defects:
/// 1. drawing with replacement makes the compositions non-uniform (repeated
///    cuts are over-weighted); here the cut points are distinct;
/// 2. its exclusive upper bound means the last share is always at least 2
///    cents — it can never be 1 cent; here every share can be 1 cent.
///
/// **Efficiency:** cut points are sampled with Floyd's algorithm (one
/// integer `u64` draw per cut) into a sorted set: `O(count · log count)` time
/// and `O(count)` memory, independent of `total_cents` (e.g. `10^9` cents into
/// `10^4` shares is cheap); no array of size `total_cents` is ever built.
///
/// Returns exactly `count` shares (cents) in grab order, each `>= 1`, summing
/// exactly to `total_cents`.
///
/// # Errors
/// [`SplitError::ZeroCount`] if `count == 0`; [`SplitError::TotalTooSmall`] if
/// `total_cents < count`.
pub fn line_cut<R: Rng + ?Sized>(
    total_cents: i64,
    count: u32,
    rng: &mut R,
) -> Result<Vec<i64>, SplitError> {
    let total = validate(total_cents, count)?;
    // Interior positions 1..=n, choose k distinct ones (k <= n since total >= count).
    let cuts = floyd_sorted_sample(total - 1, u64::from(count) - 1, rng);
    let mut shares = Vec::with_capacity(count as usize);
    let mut prev = 0u64;
    for cut in cuts.into_iter().chain(std::iter::once(total)) {
        debug_assert!(cut > prev);
        shares.push((cut - prev) as i64);
        prev = cut;
    }
    Ok(shares)
}

/// Below this many cut points a sorted `Vec` beats a `BTreeSet`.
const SMALL_SAMPLE: u64 = 256;

/// Robert Floyd's algorithm: a uniformly random `k`-subset of `1..=n`
/// (`k <= n`), returned sorted ascending, with exactly `k` draws.
///
/// For `j = n − k + 1 ..= n`: draw `t` uniform on `1..=j`; insert `t`, or `j`
/// if `t` is already in the set. Each inserted `j` exceeds every earlier
/// element, so with a sorted `Vec` it is a push; `t` is placed by binary
/// search. Small samples use the `Vec`, larger ones a `BTreeSet`
/// (`O(k log k)`); both consume the RNG identically and give the same result.
fn floyd_sorted_sample<R: Rng + ?Sized>(n: u64, k: u64, rng: &mut R) -> Vec<u64> {
    debug_assert!(k <= n);
    if k <= SMALL_SAMPLE {
        floyd_sorted_vec(n, k, rng)
    } else {
        floyd_btree(n, k, rng)
    }
}

fn floyd_sorted_vec<R: Rng + ?Sized>(n: u64, k: u64, rng: &mut R) -> Vec<u64> {
    let mut set: Vec<u64> = Vec::with_capacity(k as usize);
    for j in (n - k + 1)..=n {
        let t = rng.random_range(1..=j);
        match set.binary_search(&t) {
            Ok(_) => set.push(j),
            Err(pos) => set.insert(pos, t),
        }
    }
    set
}

fn floyd_btree<R: Rng + ?Sized>(n: u64, k: u64, rng: &mut R) -> Vec<u64> {
    let mut set = BTreeSet::new();
    for j in (n - k + 1)..=n {
        let t = rng.random_range(1..=j);
        if !set.insert(t) {
            set.insert(j);
        }
    }
    set.into_iter().collect()
}

#[cfg(test)]
mod tests;
