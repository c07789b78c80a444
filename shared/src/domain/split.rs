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
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
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
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
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
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    fn rng() -> StdRng {
        StdRng::seed_from_u64(0x6b6f_6e67_6261_6f21)
    }

    fn lucky_splits(total: i64, count: u32) -> Vec<Vec<i64>> {
        let mut r = rng();
        vec![
            double_mean(total, count, &mut r).unwrap(),
            line_cut(total, count, &mut r).unwrap(),
            split(total, count, Mode::Lucky, LuckySplit::DoubleMean, &mut r).unwrap(),
            split(total, count, Mode::Lucky, LuckySplit::LineCut, &mut r).unwrap(),
        ]
    }

    #[test]
    fn count_one_gets_everything() {
        for total in [1, 2, 999, 1_000_000_000, i64::MAX] {
            for s in lucky_splits(total, 1) {
                assert_eq!(s, vec![total]);
            }
            assert_eq!(fixed(total, 1).unwrap(), vec![total]);
        }
    }

    #[test]
    fn total_equal_count_is_all_ones() {
        for count in [1u32, 2, 3, 10, 10_000] {
            let total = i64::from(count);
            for s in lucky_splits(total, count) {
                assert_eq!(s, vec![1; count as usize]);
            }
            assert_eq!(fixed(total, count).unwrap(), vec![1; count as usize]);
        }
    }

    #[test]
    fn two_shares_of_three_cents() {
        // Both lucky rules must be able to produce 1+2 and 2+1 only.
        let mut r = rng();
        let mut seen_dm = BTreeSet::new();
        let mut seen_lc = BTreeSet::new();
        for _ in 0..200 {
            seen_dm.insert(double_mean(3, 2, &mut r).unwrap());
            seen_lc.insert(line_cut(3, 2, &mut r).unwrap());
        }
        let want: BTreeSet<Vec<i64>> = [vec![1, 2], vec![2, 1]].into();
        assert_eq!(seen_dm, want);
        assert_eq!(seen_lc, want);
    }

    #[test]
    fn zero_count_is_an_error() {
        let mut r = rng();
        assert_eq!(fixed(100, 0), Err(SplitError::ZeroCount));
        assert_eq!(double_mean(100, 0, &mut r), Err(SplitError::ZeroCount));
        assert_eq!(line_cut(100, 0, &mut r), Err(SplitError::ZeroCount));
        assert_eq!(
            split(0, 0, Mode::Lucky, LuckySplit::LineCut, &mut r),
            Err(SplitError::ZeroCount)
        );
    }

    #[test]
    fn total_below_count_is_an_error() {
        let mut r = rng();
        for (total, count) in [(9, 10), (0, 1), (-5, 1), (-1, 3), (i64::MIN, 1)] {
            let e = || {
                Err(SplitError::TotalTooSmall {
                    total_cents: total,
                    count,
                })
            };
            assert_eq!(fixed(total, count), e());
            assert_eq!(double_mean(total, count, &mut r), e());
            assert_eq!(line_cut(total, count, &mut r), e());
            for mode in [Mode::Lucky, Mode::Fixed] {
                for lucky in [LuckySplit::DoubleMean, LuckySplit::LineCut] {
                    assert_eq!(split(total, count, mode, lucky, &mut r), e());
                }
            }
        }
    }

    #[test]
    fn fixed_splits_evenly_or_refuses() {
        assert_eq!(fixed(1000, 4).unwrap(), vec![250; 4]);
        assert_eq!(fixed(7, 7).unwrap(), vec![1; 7]);
        assert_eq!(
            fixed(1000, 3),
            Err(SplitError::NotDivisible {
                total_cents: 1000,
                count: 3
            })
        );
        assert_eq!(
            fixed(10_001, 10),
            Err(SplitError::NotDivisible {
                total_cents: 10_001,
                count: 10
            })
        );
        // Lucky mode accepts the indivisible total; fixed mode ignores `lucky`.
        let mut r = rng();
        assert!(split(1000, 3, Mode::Lucky, LuckySplit::DoubleMean, &mut r).is_ok());
        for lucky in [LuckySplit::DoubleMean, LuckySplit::LineCut] {
            assert_eq!(
                split(1000, 3, Mode::Fixed, lucky, &mut r),
                Err(SplitError::NotDivisible {
                    total_cents: 1000,
                    count: 3
                })
            );
            assert_eq!(
                split(900, 3, Mode::Fixed, lucky, &mut r).unwrap(),
                vec![300; 3]
            );
        }
    }

    #[test]
    fn huge_totals_do_not_overflow() {
        let mut r = rng();
        for total in [i64::MAX, i64::MAX - 1, 1_000_000_000_000_000_000] {
            for count in [2u32, 3, 1000] {
                for s in [
                    double_mean(total, count, &mut r).unwrap(),
                    line_cut(total, count, &mut r).unwrap(),
                ] {
                    assert_eq!(s.len(), count as usize);
                    assert!(s.iter().all(|&x| x >= 1));
                    let sum: i128 = s.iter().map(|&x| i128::from(x)).sum();
                    assert_eq!(sum, i128::from(total));
                }
            }
        }
    }

    /// Exact rational number for the exhaustive expectation test.
    #[derive(Clone, Copy, Debug)]
    struct Frac(u128, u128);

    impl Frac {
        fn new(n: u128, d: u128) -> Frac {
            fn gcd(a: u128, b: u128) -> u128 {
                if b == 0 {
                    a
                } else {
                    gcd(b, a % b)
                }
            }
            let g = gcd(n, d).max(1);
            Frac(n / g, d / g)
        }
        fn add(self, o: Frac) -> Frac {
            Frac::new(self.0 * o.1 + o.0 * self.1, self.1 * o.1)
        }
        fn mul(self, o: Frac) -> Frac {
            Frac::new(self.0 * o.0, self.1 * o.1)
        }
    }

    /// Exact expected share at each of the `left` remaining positions of the
    /// double-mean rule, given `remaining` cents; also checks the bounds of
    /// every reachable draw.
    fn dm_expectation(
        remaining: u64,
        left: u64,
        memo: &mut std::collections::HashMap<(u64, u64), Vec<Frac>>,
    ) -> Vec<Frac> {
        if left == 1 {
            return vec![Frac(u128::from(remaining), 1)];
        }
        if let Some(v) = memo.get(&(remaining, left)) {
            return v.clone();
        }
        let (q, r) = double_mean_params(remaining, left);
        assert!(q >= 2, "R={remaining} L={left}");
        // The implemented procedure: y uniform on 1..=q; y < q is kept; y == q
        // is kept with probability r/L, else redrawn uniformly on 1..=q-1.
        let mut law: Vec<(u64, Frac)> = (1..q).map(|y| (y, Frac(1, u128::from(q)))).collect();
        law.push((
            q,
            Frac::new(u128::from(r), u128::from(left) * u128::from(q)),
        ));
        let redraw = Frac::new(
            u128::from(left - r),
            u128::from(left) * u128::from(q) * u128::from(q - 1),
        );
        for z in 1..q {
            law.push((z, redraw));
        }
        let mut out = vec![Frac(0, 1); left as usize];
        let mut total_p = Frac(0, 1);
        for (share, p) in law {
            if p.0 == 0 {
                continue;
            }
            assert!(share <= remaining - (left - 1), "R={remaining} L={left}");
            assert!(share <= 2 * remaining / left, "R={remaining} L={left}");
            total_p = total_p.add(p);
            out[0] = out[0].add(p.mul(Frac(u128::from(share), 1)));
            let rest = dm_expectation(remaining - share, left - 1, memo);
            for (o, e) in out[1..].iter_mut().zip(rest) {
                *o = o.add(p.mul(e));
            }
        }
        assert_eq!((total_p.0, total_p.1), (1, 1), "R={remaining} L={left}");
        memo.insert((remaining, left), out.clone());
        out
    }

    /// Exhaustive, exact (rational) expectation of the double-mean rule for
    /// small packets: the expected share is exactly total/count at every
    /// position. The uncorrected rule (uniform on 1..=floor(2R/L)) fails this.
    #[test]
    fn double_mean_is_exactly_unbiased_small_cases() {
        let mut memo = std::collections::HashMap::new();
        for count in 1..=6u64 {
            for total in count..=40u64 {
                let exp = dm_expectation(total, count, &mut memo);
                assert_eq!(exp.len() as u64, count);
                for (pos, e) in exp.iter().enumerate() {
                    assert_eq!(
                        e.0 * u128::from(count),
                        u128::from(total) * e.1,
                        "total={total} count={count} pos={pos} E={}/{}",
                        e.0,
                        e.1
                    );
                }
            }
        }
    }

    #[test]
    fn floyd_vec_and_btree_agree() {
        for (n, k) in [
            (0, 0),
            (1, 1),
            (5, 2),
            (9, 9),
            (19_999, 99),
            (1_000_000_000, 300),
            (600, 599),
        ] {
            for seed in 0..20u64 {
                let a = floyd_sorted_vec(n, k, &mut StdRng::seed_from_u64(seed));
                let b = floyd_btree(n, k, &mut StdRng::seed_from_u64(seed));
                assert_eq!(a, b);
                assert_eq!(a.len() as u64, k);
                assert!(a.windows(2).all(|w| w[0] < w[1]));
                assert!(a.iter().all(|&x| (1..=n).contains(&x)));
            }
        }
    }

    #[test]
    fn wire_names_round_trip() {
        for m in [Mode::Lucky, Mode::Fixed] {
            assert_eq!(m.as_str().parse::<Mode>(), Ok(m));
            assert_eq!(m.to_string(), m.as_str());
        }
        for l in [LuckySplit::DoubleMean, LuckySplit::LineCut] {
            assert_eq!(l.as_str().parse::<LuckySplit>(), Ok(l));
            assert_eq!(l.to_string(), l.as_str());
        }
        assert_eq!(Mode::Lucky.as_str(), "lucky");
        assert_eq!(Mode::Fixed.as_str(), "fixed");
        assert_eq!(LuckySplit::DoubleMean.as_str(), "double_mean");
        assert_eq!(LuckySplit::LineCut.as_str(), "line_cut");
        assert_eq!(serde_json::to_string(&Mode::Lucky).unwrap(), "\"lucky\"");
        assert_eq!(
            serde_json::to_string(&LuckySplit::DoubleMean).unwrap(),
            "\"double_mean\""
        );
        assert_eq!(
            serde_json::from_str::<LuckySplit>("\"line_cut\"").unwrap(),
            LuckySplit::LineCut
        );
        assert_eq!(
            serde_json::from_str::<Mode>("\"fixed\"").unwrap(),
            Mode::Fixed
        );
        assert!(serde_json::from_str::<Mode>("\"Fixed\"").is_err());
        assert!("Lucky".parse::<Mode>().is_err());
        assert!("lineCut".parse::<LuckySplit>().is_err());
        assert!("".parse::<LuckySplit>().is_err());
    }
}
